// The Tinker protocol's HTTP front under /api/v1/ (DESIGN.md §8): each route of
// routes.ts, authenticated by `X-API-Key` (`tml-<our key>`, or a JWT minted for
// one), answered in the shape the official SDK reads; refusals carry the status
// our API gives the same mistake and `{ "detail": … }`. Download links carry no
// key: the link's signature says what it may read.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createCaller, createInnerContext } from "@opentinker/api";
import { asTeam, NotFoundError, QuotaExceededError } from "@opentinker/db";
import { TRPCError } from "@trpc/server";
import { HttpError, refuseNulBytes } from "../api/body.ts";
import { type ApiDeps, forgetAuthenticatedKeys } from "../api/context.ts";
import { tinkerCaller } from "./auth.ts";
import { TinkerError } from "./convert.ts";
import { download } from "./downloads.ts";
import { sendRefusal, trpcRefusal } from "./errors.ts";
import type { TinkerModelAliases } from "./model-names.ts";
import { matchRoute, TINKER_ROOTS } from "./routes.ts";
import type { Reply, Scope } from "./scope.ts";
import { PROTOBUF, WireError } from "./wire.ts";

const PREFIX = "/api/v1/";

/** The Tinker path below /api/v1/ when `pathname` is one of the protocol's, else null. */
export function tinkerRoute(pathname: string): string | null {
  if (!pathname.startsWith(PREFIX)) return null;
  const path = pathname.slice(PREFIX.length).replace(/\/+$/, "");
  return TINKER_ROOTS.has(path.split("/")[0] ?? "") ? path : null;
}

function send(res: ServerResponse, reply: Reply): void {
  const headers = { "cache-control": "no-store" };
  if ("empty" in reply) {
    res.writeHead(204, headers);
    res.end();
    return;
  }
  if ("file" in reply) {
    const { contentType, filename, body } = reply.file;
    res.writeHead(200, {
      ...headers,
      "content-type": contentType,
      "content-disposition": `attachment; filename="${filename.replace(/[^A-Za-z0-9._-]/g, "_")}"`,
    });
    if (Buffer.isBuffer(body)) res.end(body);
    else body.pipe(res);
    return;
  }
  const protobuf = "protobuf" in reply;
  const body = protobuf ? Buffer.from(reply.protobuf) : Buffer.from(JSON.stringify(reply.json));
  res.writeHead(200, {
    ...headers,
    "content-type": protobuf ? PROTOBUF : "application/json; charset=utf-8",
    "content-length": body.byteLength,
  });
  res.end(body);
}

const UNAUTHENTICATED = "missing, unknown or revoked API key: send X-API-Key: tml-<your OpenTinker API key>";

/** Where the caller reached this service (links it is handed must work from there). */
function originOf(req: IncomingMessage): string {
  const forwarded = req.headers["x-forwarded-proto"];
  const proto = typeof forwarded === "string" && /^https?$/.test(forwarded) ? forwarded : "http";
  return `${proto}://${req.headers.host ?? "localhost"}`;
}

function query(req: IncomingMessage): Record<string, string> {
  return Object.fromEntries(new URL(req.url ?? "/", "http://localhost").searchParams);
}

async function answer(deps: ApiDeps & { aliases: TinkerModelAliases }, req: IncomingMessage, path: string) {
  if (path === "healthz" && req.method === "GET") return { json: { status: "ok" } };
  if (path.startsWith("downloads/") && req.method === "GET")
    return download(deps.db, deps.store ?? null, deps.sessionSecret, path.slice("downloads/".length));
  let matched: ReturnType<typeof matchRoute>;
  try {
    matched = matchRoute(req.method ?? "GET", path);
  } catch {
    throw new TinkerError(400, `malformed path /api/v1/${path}`);
  }
  if (!matched.route) {
    if (matched.allowed.length > 0)
      throw new TinkerError(405, `use ${matched.allowed.join(" or ")} /api/v1/${path}`);
    throw new TinkerError(404, `no Tinker route ${req.method} /api/v1/${path}`);
  }
  const { route, params } = matched;
  const header = req.headers["x-api-key"];
  const caller = await tinkerCaller(deps.db, deps.sessionSecret, typeof header === "string" ? header : "");
  if (!caller) throw new TinkerError(401, UNAUTHENTICATED);
  // Bodies are checked as they are read (JSON in body.ts, protobuf in wire.ts); the URL's parts here.
  const search = query(req);
  refuseNulBytes(params);
  refuseNulBytes(search);
  const ctx = createInnerContext({
    db: deps.db,
    waiter: deps.waiter,
    caller,
    remoteEnvHosts: deps.remoteEnvHosts,
    keyRevoked: forgetAuthenticatedKeys,
    store: deps.store,
  });
  const scope: Scope = {
    ctx: { ...ctx, caller },
    api: createCaller(ctx),
    aliases: deps.aliases,
    secret: deps.sessionSecret,
    origin: originOf(req),
  };
  // As the caller's team: its queries hold at most the team's share of the database pool.
  return asTeam(caller.teamId, () => route.handler({ scope, req, params, query: search }));
}

export function createTinkerHandler(deps: ApiDeps & { tinkerModels?: TinkerModelAliases }) {
  const withAliases = { ...deps, aliases: deps.tinkerModels ?? {} };
  return async (req: IncomingMessage, res: ServerResponse, path: string): Promise<void> => {
    try {
      send(res, await answer(withAliases, req, path));
    } catch (error) {
      if (error instanceof TinkerError || error instanceof HttpError)
        return sendRefusal(res, error.status, error.message);
      if (error instanceof WireError) return sendRefusal(res, 400, error.message);
      if (error instanceof NotFoundError) return sendRefusal(res, 404, error.message);
      if (error instanceof QuotaExceededError) return sendRefusal(res, 429, error.message);
      if (error instanceof TRPCError) {
        const refusal = trpcRefusal(error);
        if (refusal.errorStatus >= 500)
          console.error(`web: tinker ${path} failed: ${error.cause?.message ?? error.message}`);
        return sendRefusal(res, refusal.errorStatus, refusal.error);
      }
      console.error(`web: tinker ${path} failed: ${error instanceof Error ? error.message : error}`);
      sendRefusal(res, 500, "internal error");
    }
  };
}
