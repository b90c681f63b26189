// Every route of the Tinker protocol under /api/v1/ and the function that
// answers it. Paths are snake_case (`create_model`, `training_runs/…`), so none
// meets one of our REST routes (/api/v1/<domain>/… in kebab-case words).
import type { IncomingMessage } from "node:http";
import { HttpError, MAX_BODY_BYTES, readBodyBytes, readJsonBody } from "../api/body.ts";
import * as account from "./account.ts";
import { retrieveFuture } from "./futures.ts";
import * as models from "./models.ts";
import * as runs from "./runs.ts";
import * as sampling from "./sampling.ts";
import { ZForwardBackwardBody, ZForwardBody } from "./schemas.ts";
import { parseBody, type Reply, type Scope } from "./scope.ts";
import * as sessions from "./sessions.ts";
import { tensorLimits } from "./tensor-limits.ts";
import * as training from "./training.ts";
import * as weights from "./weights.ts";
import { decodeForwardBackward, PROTOBUF } from "./wire.ts";
import { decompressZstd } from "./zstd-body.ts";

export type Method = "GET" | "POST" | "PUT" | "DELETE";

export interface Call {
  scope: Scope;
  req: IncomingMessage;
  params: Record<string, string>;
  query: Record<string, string>;
}

type Handler = (call: Call) => Promise<Reply>;

const json =
  (run: (call: Call) => unknown): Handler =>
  async (call) => ({ json: await run(call) });

const jsonBody =
  (run: (scope: Scope, body: unknown) => unknown): Handler =>
  async ({ scope, req }) => ({ json: await run(scope, await readJsonBody(req)) });

const done =
  (run: (call: Call) => Promise<void>): Handler =>
  async (call) => {
    await run(call);
    return { empty: true };
  };

/** A request body's bytes, decompressed when the client sent them zstd-compressed. */
async function bodyBytes(req: IncomingMessage): Promise<Buffer> {
  const encoding = req.headers["content-encoding"] ?? "identity";
  const bytes = await readBodyBytes(req);
  if (encoding === "identity") return bytes;
  if (encoding === "zstd") return decompressZstd(bytes, MAX_BODY_BYTES);
  throw new HttpError(415, `content-encoding ${encoding} is not accepted (send zstd or none)`);
}

/** 0.25 sends protobuf (forward_only marks forward()); 0.24 sends the JSON body. */
const forwardBackward: Handler = async ({ scope, req }) => {
  if ((req.headers["content-type"] ?? "").startsWith(PROTOBUF)) {
    const bytes = await bodyBytes(req);
    const { forward_only, ...body } = await decodeForwardBackward(bytes, (model) =>
      tensorLimits(scope, model),
    );
    return {
      json: await training.forwardBackward(scope, parseBody(ZForwardBackwardBody, body), forward_only),
    };
  }
  const body = parseBody(ZForwardBackwardBody, await readJsonBody(req));
  return { json: await training.forwardBackward(scope, body, false) };
};

const forward: Handler = async ({ scope, req }) => {
  const { forward_input, ...rest } = parseBody(ZForwardBody, await readJsonBody(req));
  return {
    json: await training.forwardBackward(scope, { ...rest, forward_backward_input: forward_input }, true),
  };
};

const accepts = (req: IncomingMessage) => (req.headers.accept ?? "").includes(PROTOBUF);

const ref = (p: Record<string, string>) => ({
  run: p.run as string,
  weights: p.weights as string,
  name: p.name as string,
});

const CHECKPOINT = "training_runs/:run/checkpoints/:weights/:name";

/** Method, path pattern (":x" is one segment) and handler of every route that takes a key. */
export const ROUTES: { method: Method; pattern: string; handler: Handler }[] = [
  { method: "POST", pattern: "client/config", handler: json(() => models.clientConfig()) },
  { method: "POST", pattern: "client/dynamic_config", handler: json(() => models.dynamicConfig()) },
  { method: "POST", pattern: "auth/token", handler: json(({ scope }) => account.authToken(scope)) },
  { method: "POST", pattern: "create_session", handler: jsonBody(sessions.createSession) },
  { method: "POST", pattern: "session_heartbeat", handler: jsonBody(sessions.sessionHeartbeat) },
  {
    method: "GET",
    pattern: "get_server_capabilities",
    handler: json(({ scope }) => models.serverCapabilities(scope)),
  },
  { method: "POST", pattern: "create_model", handler: jsonBody(models.createModel) },
  { method: "POST", pattern: "get_info", handler: jsonBody(models.getInfo) },
  { method: "POST", pattern: "unload_model", handler: jsonBody(models.unloadModel) },
  { method: "POST", pattern: "forward_backward", handler: forwardBackward },
  { method: "POST", pattern: "forward", handler: forward },
  { method: "POST", pattern: "optim_step", handler: jsonBody(training.optimStep) },
  { method: "POST", pattern: "save_weights_for_sampler", handler: jsonBody(training.saveWeightsForSampler) },
  { method: "POST", pattern: "save_weights", handler: jsonBody(weights.saveWeights) },
  { method: "POST", pattern: "load_weights", handler: jsonBody(weights.loadWeights) },
  { method: "POST", pattern: "weights_info", handler: jsonBody(weights.weightsInfo) },
  { method: "POST", pattern: "create_sampling_session", handler: jsonBody(sampling.createSamplingSession) },
  { method: "POST", pattern: "asample", handler: jsonBody(sampling.sample) },
  {
    method: "POST",
    pattern: "retrieve_future",
    handler: async ({ scope, req }) => retrieveFuture(scope, await readJsonBody(req), accepts(req)),
  },
  // Accepted and dropped: the SDK reports its own events here.
  { method: "POST", pattern: "telemetry", handler: json(() => ({ status: "accepted" })) },
  {
    method: "GET",
    pattern: "training_runs",
    handler: json(({ scope, query }) => runs.listRuns(scope, query)),
  },
  {
    method: "GET",
    pattern: "training_runs/:run",
    handler: json(({ scope, params, query }) => runs.getRun(scope, params.run as string, query)),
  },
  {
    method: "GET",
    pattern: "training_runs/:run/checkpoints",
    handler: json(({ scope, params }) => weights.listRunCheckpoints(scope, params.run as string)),
  },
  {
    method: "DELETE",
    pattern: CHECKPOINT,
    handler: done(({ scope, params }) => weights.deleteCheckpoint(scope, ref(params))),
  },
  {
    method: "GET",
    pattern: `${CHECKPOINT}/archive`,
    handler: json(({ scope, params }) => weights.archiveUrl(scope, ref(params))),
  },
  {
    method: "POST",
    pattern: `${CHECKPOINT}/publish`,
    handler: done(({ scope, params }) => weights.setPublished(scope, ref(params), true)),
  },
  {
    method: "DELETE",
    pattern: `${CHECKPOINT}/publish`,
    handler: done(({ scope, params }) => weights.setPublished(scope, ref(params), false)),
  },
  {
    method: "PUT",
    pattern: `${CHECKPOINT}/ttl`,
    handler: done(async ({ scope, params, req }) =>
      weights.setTtl(scope, ref(params), await readJsonBody(req)),
    ),
  },
  {
    method: "GET",
    pattern: "checkpoints",
    handler: json(({ scope, query }) => weights.listTeamCheckpoints(scope, query)),
  },
  {
    method: "GET",
    pattern: "sessions",
    handler: json(({ scope, query }) => sessions.listSessions(scope, query)),
  },
  {
    method: "GET",
    pattern: "sessions/:session",
    handler: json(({ scope, params, query }) => sessions.getSession(scope, params.session as string, query)),
  },
  {
    method: "PUT",
    pattern: "sessions/:session/project",
    handler: done(async ({ scope, params, req }) =>
      sessions.assignProject(scope, params.session as string, await readJsonBody(req)),
    ),
  },
  {
    method: "GET",
    pattern: "sessions/:session/trace_export",
    handler: json(({ scope, params }) => sessions.exportTrace(scope, params.session as string)),
  },
  {
    method: "GET",
    pattern: "samplers/:sampler",
    handler: json(({ scope, params }) => sessions.getSampler(scope, params.sampler as string)),
  },
  { method: "GET", pattern: "audit", handler: json(({ scope, query }) => account.auditLog(scope, query)) },
  {
    method: "GET",
    pattern: "billing/usage/events",
    handler: json(({ scope, query }) => account.billingUsage(scope, query)),
  },
];

/** The first path segments that belong to the Tinker protocol (health and download links take no key). */
export const TINKER_ROOTS = new Set([
  ...ROUTES.map((r) => r.pattern.split("/")[0] as string),
  "healthz",
  "downloads",
]);

/** The route a method and path (below /api/v1/) name, with their parameters; null when none. */
export function matchRoute(method: string, path: string) {
  const segments = path.split("/").map(decodeURIComponent);
  let allowed: Method[] = [];
  for (const route of ROUTES) {
    const parts = route.pattern.split("/");
    if (parts.length !== segments.length) continue;
    const params: Record<string, string> = {};
    const fits = parts.every((part, i) => {
      const segment = segments[i] as string;
      if (part.startsWith(":")) {
        params[part.slice(1)] = segment;
        return segment !== "";
      }
      return part === segment;
    });
    if (!fits) continue;
    if (route.method === method) return { route, params };
    allowed = [...allowed, route.method];
  }
  return { route: null, allowed };
}
