import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import type { Db } from "@opentinker/db";
import { checkHealth } from "./api/health.ts";

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
export function createRequestListener(deps: { db: Db; pages?: PageHandler }): RequestListener {
  return (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    if (url.pathname === "/api/health") {
      if (req.method !== "GET" && req.method !== "HEAD")
        return sendJson(res, 405, { error: "use GET /api/health" });
      void checkHealth(deps.db).then((report) => sendJson(res, report.status === "ok" ? 200 : 503, report));
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
