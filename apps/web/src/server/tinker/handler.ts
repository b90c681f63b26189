// The Tinker protocol's HTTP front under /api/v1/ (DESIGN.md §8): the routes the
// official Python SDK calls, authenticated by `X-API-Key: tml-<our key>`, each
// answered by one function of calls.ts / futures.ts. Its paths are snake_case
// single segments, so none meets one of our REST routes (/api/v1/<domain>/…).
import type { IncomingMessage, ServerResponse } from "node:http";
import { createCaller, createInnerContext } from "@opentinker/api";
import { NotFoundError } from "@opentinker/db";
import { fromTinkerApiKey } from "@opentinker/protocol";
import { TRPCError } from "@trpc/server";
import { HttpError, readBodyBytes, readJsonBody } from "../api/body.ts";
import { type ApiDeps, callerFromApiKey, forgetAuthenticatedKeys } from "../api/context.ts";
import * as calls from "./calls.ts";
import { TinkerError } from "./convert.ts";
import { sendRefusal, trpcRefusal } from "./errors.ts";
import { type Reply, retrieveFuture } from "./futures.ts";
import type { TinkerModelAliases } from "./model-names.ts";
import { ZForwardBackwardBody, ZForwardBody } from "./schemas.ts";
import { decodeForwardBackward, PROTOBUF, WireError } from "./wire.ts";

type Handler = (scope: calls.Scope, req: IncomingMessage) => Promise<Reply>;

const json =
  (run: (scope: calls.Scope, body: unknown) => unknown): Handler =>
  async (scope, req) => ({ json: await run(scope, await readJsonBody(req)) });

const isProtobuf = (req: IncomingMessage) => (req.headers["content-type"] ?? "").startsWith(PROTOBUF);

/** 0.25 sends protobuf (forward_only marks forward()); 0.24 sends the JSON body. */
const forwardBackward: Handler = async (scope, req) => {
  if (req.headers["content-encoding"] && req.headers["content-encoding"] !== "identity")
    throw new HttpError(
      415,
      `content-encoding ${req.headers["content-encoding"]} is not accepted; send it uncompressed`,
    );
  if (isProtobuf(req)) {
    const { forward_only, ...body } = decodeForwardBackward(await readBodyBytes(req));
    return {
      json: await calls.forwardBackward(scope, calls.parseBody(ZForwardBackwardBody, body), forward_only),
    };
  }
  const body = calls.parseBody(ZForwardBackwardBody, await readJsonBody(req));
  return { json: await calls.forwardBackward(scope, body, false) };
};

const forward: Handler = async (scope, req) => {
  const { forward_input, ...rest } = calls.parseBody(ZForwardBody, await readJsonBody(req));
  return {
    json: await calls.forwardBackward(scope, { ...rest, forward_backward_input: forward_input }, true),
  };
};

const accepts = (req: IncomingMessage) => (req.headers.accept ?? "").includes(PROTOBUF);

const ROUTES: Record<string, { method: "GET" | "POST"; handler: Handler }> = {
  "client/config": { method: "POST", handler: json(() => calls.clientConfig()) },
  create_session: { method: "POST", handler: json((_, body) => calls.createSession(body)) },
  session_heartbeat: { method: "POST", handler: json((_, body) => calls.sessionHeartbeat(body)) },
  get_server_capabilities: {
    method: "GET",
    handler: async (scope) => ({ json: await calls.serverCapabilities(scope) }),
  },
  create_model: { method: "POST", handler: json(calls.createModel) },
  get_info: { method: "POST", handler: json(calls.getInfo) },
  forward_backward: { method: "POST", handler: forwardBackward },
  forward: { method: "POST", handler: forward },
  optim_step: { method: "POST", handler: json(calls.optimStep) },
  save_weights_for_sampler: { method: "POST", handler: json(calls.saveWeightsForSampler) },
  create_sampling_session: { method: "POST", handler: json(calls.createSamplingSession) },
  asample: { method: "POST", handler: json(calls.sample) },
  retrieve_future: {
    method: "POST",
    handler: async (scope, req) => retrieveFuture(scope, await readJsonBody(req), accepts(req)),
  },
  // Accepted and dropped: the SDK reports its own events here.
  telemetry: { method: "POST", handler: async () => ({ json: { status: "accepted" } }) },
};

/** The Tinker route a path names (`/api/v1/<name>`), or null for any other path. */
export function tinkerRoute(pathname: string): string | null {
  const name = pathname.replace(/^\/api\/v1\//, "").replace(/\/+$/, "");
  return name === "healthz" || Object.hasOwn(ROUTES, name) ? name : null;
}

function send(res: ServerResponse, reply: Reply): void {
  const protobuf = "protobuf" in reply;
  const body = protobuf ? Buffer.from(reply.protobuf) : Buffer.from(JSON.stringify(reply.json));
  res.writeHead(200, {
    "content-type": protobuf ? PROTOBUF : "application/json; charset=utf-8",
    "content-length": body.byteLength,
    "cache-control": "no-store",
  });
  res.end(body);
}

const UNAUTHENTICATED = "missing, unknown or revoked API key: send X-API-Key: tml-<your OpenTinker API key>";

export function createTinkerHandler(deps: ApiDeps & { tinkerModels?: TinkerModelAliases }) {
  const aliases = deps.tinkerModels ?? {};
  return async (req: IncomingMessage, res: ServerResponse, name: string): Promise<void> => {
    if (name === "healthz") return send(res, { json: { status: "ok" } });
    const route = ROUTES[name];
    if (!route) return sendRefusal(res, 404, `no Tinker route ${name}`);
    if (req.method !== route.method) return sendRefusal(res, 405, `use ${route.method} /api/v1/${name}`);
    try {
      const header = req.headers["x-api-key"];
      const key = fromTinkerApiKey(typeof header === "string" ? header : "");
      const caller = key ? await callerFromApiKey(deps.db, key) : null;
      if (!caller) return sendRefusal(res, 401, UNAUTHENTICATED);
      const ctx = createInnerContext({
        db: deps.db,
        waiter: deps.waiter,
        caller,
        remoteEnvHosts: deps.remoteEnvHosts,
        keyRevoked: forgetAuthenticatedKeys,
        store: deps.store,
      });
      const scope = { ctx: { ...ctx, caller }, api: createCaller(ctx), aliases };
      send(res, await route.handler(scope, req));
    } catch (error) {
      if (error instanceof TinkerError || error instanceof HttpError)
        return sendRefusal(res, error.status, error.message);
      if (error instanceof WireError) return sendRefusal(res, 400, error.message);
      if (error instanceof NotFoundError) return sendRefusal(res, 404, error.message);
      if (error instanceof TRPCError) {
        const refusal = trpcRefusal(error);
        if (refusal.errorStatus >= 500)
          console.error(`web: tinker ${name} failed: ${error.cause?.message ?? error.message}`);
        return sendRefusal(res, refusal.errorStatus, refusal.error);
      }
      console.error(`web: tinker ${name} failed: ${error instanceof Error ? error.message : error}`);
      sendRefusal(res, 500, "internal error");
    }
  };
}
