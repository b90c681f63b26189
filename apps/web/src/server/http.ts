import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { createAuthHandler } from "./api/auth-routes.ts";
import type { ApiDeps } from "./api/context.ts";
import { checkHealth } from "./api/health.ts";
import { createRestHandler, openApiDocument } from "./api/rest.ts";
import { createTrpcHandler } from "./api/trpc.ts";
import { createTinkerHandler, tinkerRoute } from "./tinker/handler.ts";
import type { TinkerModelAliases } from "./tinker/model-names.ts";

export type PageHandler = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
  res.end(JSON.stringify(body));
}

/**
 * The web process's request router: API routes are served here, outside Next.js,
 * so they share one process-wide database client and can be tested without a
 * page build; every other path goes to the Next.js page handler.
 */
export function createRequestListener(
  deps: ApiDeps & {
    pages?: PageHandler;
    tinkerModels?: TinkerModelAliases;
    /** True once the process is stopping: readiness (GET /api/health) answers 503 so load balancers move on. */
    draining?: () => boolean;
  },
): RequestListener {
  const rest = createRestHandler(deps);
  const tinker = createTinkerHandler(deps);
  const trpc = createTrpcHandler(deps);
  const auth = createAuthHandler(deps);
  const fail = (res: ServerResponse) => (error: unknown) => {
    console.error(`web: API request failed: ${error instanceof Error ? error.message : error}`);
    if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
  };
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    // The Tinker protocol's routes (snake_case, one segment) share /api/v1/ with our REST routes.
    const tinkerName = tinkerRoute(url.pathname);
    if (tinkerName) return void tinker(req, res, tinkerName).catch(fail(res));
    if (url.pathname.startsWith("/api/v1/")) return void rest(req, res).catch(fail(res));
    if (url.pathname.startsWith("/api/trpc/")) return void Promise.resolve(trpc(req, res)).catch(fail(res));
    if (url.pathname.startsWith("/api/auth/")) return void auth(req, res, url.pathname).catch(fail(res));
    if (url.pathname === "/api/openapi.json")
      return sendJson(res, 200, openApiDocument(`http://${req.headers.host ?? "localhost"}/api`));
    // Liveness: the process answers (a database outage must not get every web process restarted).
    if (url.pathname === "/api/health/live") {
      if (req.method !== "GET" && req.method !== "HEAD")
        return sendJson(res, 405, { error: "use GET /api/health/live" });
      return sendJson(res, 200, { status: "ok" });
    }
    // Readiness: the database answers and the process is not draining.
    if (url.pathname === "/api/health") {
      if (req.method !== "GET" && req.method !== "HEAD")
        return sendJson(res, 405, { error: "use GET /api/health" });
      void checkHealth(deps.db).then((report) => {
        if (deps.draining?.()) return sendJson(res, 503, { ...report, status: "draining" });
        sendJson(res, report.status === "ok" ? 200 : 503, report);
      });
      return;
    }
    if (url.pathname.startsWith("/api/"))
      return sendJson(res, 404, { error: `no API route ${url.pathname}` });
    if (!deps.pages) return sendJson(res, 404, { error: "the dashboard is not served by this process" });
    deps.pages(req, res).catch((error: unknown) => {
      console.error(`web: page ${url.pathname} failed: ${error instanceof Error ? error.message : error}`);
      if (!res.headersSent) sendJson(res, 500, { error: "internal error" });
    });
  };
}
