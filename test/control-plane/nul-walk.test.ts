// A NUL byte (U+0000) in any string a caller sends, on every front: each REST
// operation of the OpenAPI document (path and query parameters, every string of
// its body, a key of its body), each tRPC procedure (every string of its input,
// as a query, a mutation and in a batch), each Tinker route (path parameters,
// query, a string of every body it reads, protobuf strings) and the sign-in
// routes. Postgres cannot store a NUL byte in text (error 22021); every call
// must be a 400 naming the field, never a 500, and write nothing.
import { appRouter } from "@opentinker/api";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROUTES } from "../../apps/web/src/server/tinker/routes.ts";
import { BASE, ControlPlane, type Team } from "./harness.ts";
import { type JsonSchema, type Operation, operationsOf, type References, valuesFor } from "./openapi.ts";
import { objectsOf, quiet, writes } from "./team-objects.ts";
import { bindTinker, createModel, createSession, fwdBwdProto, keyOf, sftDatum } from "./tinker/client.ts";

const NUL = "\u0000";

let cp: ControlPlane;
let team: Team;
let mine: References;
let modelId = "";
let sessionId = "";
const { tinker } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("nul-walk");
  await cp.startWorker();
  mine = await objectsOf(cp, team);
  sessionId = await createSession(cp, keyOf(team));
  modelId = await createModel(cp, keyOf(team), BASE, sessionId);
  await quiet(cp);
}, 120_000);
afterAll(() => cp?.stop());

type Path = (string | number)[];

/** Every string of a value, by path (object keys included as the path to a key). */
function strings(value: unknown, path: Path = []): Path[] {
  if (typeof value === "string") return [path];
  if (typeof value !== "object" || value === null) return [];
  return Object.entries(value).flatMap(([k, v]) =>
    strings(v, [...path, Array.isArray(value) ? Number(k) : k]),
  );
}

/** The value with the string at `path` given a NUL byte. */
function withNul(value: unknown, path: Path): unknown {
  if (path.length === 0) return `${value as string}${NUL}`;
  const copy = structuredClone(value) as Record<string | number, unknown>;
  const [head, ...rest] = path as [string | number, ...Path];
  copy[head] = withNul(copy[head], rest);
  return copy;
}

/** Everything that could have been written, Tinker's sessions and samplers included. */
async function written(): Promise<string> {
  const tinkerRows = await Promise.all([cp.t.db.tinkerSession.count(), cp.t.db.tinkerSampler.count()]);
  return `${await writes(cp)} ${tinkerRows.join(" ")}`;
}

/** Asserts a refusal of a NUL byte in `field` (its path, dot-joined), writing nothing since `before`. */
async function refused(
  what: string,
  answer: { status: number; message: string },
  field: string,
  before: string,
) {
  expect(answer.status, `${what} → ${answer.status} ${answer.message}`).toBe(400);
  expect(answer.message, what).toBe(`${field}: contains a NUL byte (\\u0000), which no text field accepts`);
  expect(await written(), `${what} wrote something`).toBe(before);
}

/** An operation's parameters and body, schema-valid, naming the team's own objects. */
function inputsOf(op: Operation) {
  const params = op.parameters
    .filter((p) => p.required || p.in === "path")
    .map((p) => ({ ...p, value: String(valuesFor(p.schema, mine, p.name)[0]) }));
  const body = op.body ? valuesFor(op.body as JsonSchema, mine)[0] : undefined;
  return { params, body };
}

function routeOf(op: Operation, params: { name: string; in: string; value: string }[]): string {
  let route = op.path;
  const query = new URLSearchParams();
  for (const p of params)
    if (p.in === "path") route = route.replace(`{${p.name}}`, encodeURIComponent(p.value));
    else query.set(p.name, p.value);
  return query.size > 0 ? `${route}?${query}` : route;
}

describe("a NUL byte on the REST API", () => {
  it("is refused in every parameter, body string and body key of every operation, naming it", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    let tried = 0;
    for (const op of operationsOf(document)) {
      const { params, body } = inputsOf(op);
      const send = async (what: string, route: string, payload: unknown, field: string) => {
        const before = await written();
        const answer = await cp.api<{ message: string }>(team.key, op.method, route, payload);
        await refused(
          `${op.method} ${op.path} ${what}`,
          { status: answer.status, message: answer.body?.message },
          field,
          before,
        );
        tried++;
      };
      for (const [i, p] of params.entries()) {
        const broken = params.map((q, j) => (i === j ? { ...q, value: `${q.value}${NUL}` } : q));
        await send(`${p.in} parameter ${p.name}`, routeOf(op, broken), body, p.name);
      }
      if (op.method !== "POST") continue;
      const route = routeOf(op, params);
      for (const path of strings(body))
        await send(`body ${path.join(".")}`, route, withNul(body, path), path.join("."));
      await send("body key", route, { ...(body as object), [`extra${NUL}`]: 1 }, "extra\\u0000");
    }
    expect(tried).toBeGreaterThan(40);
  }, 300_000);
});

interface ProcedureDef {
  _def: { type: string; meta?: { openapi?: { method: string; path: string } } };
}

/** A tRPC call's error message and HTTP status, from the single or batched answer. */
async function trpc(path: string, type: string, input: unknown, batch = false) {
  const url = `${cp.url}/api/trpc/${path}${batch ? "?batch=1" : ""}`;
  const wire = batch ? { 0: input } : input;
  const headers = { authorization: `Bearer ${team.key}`, "content-type": "application/json" };
  const response =
    type === "query"
      ? await fetch(`${url}${batch ? "&" : "?"}input=${encodeURIComponent(JSON.stringify(wire))}`, {
          headers,
        })
      : await fetch(url, { method: "POST", headers, body: JSON.stringify(wire) });
  const answer = (await response.json()) as
    | { error?: { message: string } }
    | { error?: { message: string } }[];
  const error = Array.isArray(answer) ? answer[0]?.error : answer.error;
  return { status: response.status, message: error?.message ?? JSON.stringify(answer) };
}

describe("a NUL byte on tRPC", () => {
  it("is refused in every string of every procedure's input, single or batched, naming it", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    const operations = operationsOf(document);
    const procedures: Record<string, unknown> = appRouter._def.procedures;
    let tried = 0;
    for (const [name, value] of Object.entries(procedures)) {
      const procedure = value as ProcedureDef;
      const openapi = procedure._def.meta?.openapi;
      const op = operations.find((o) => o.method === openapi?.method && o.path === `${openapi?.path}`);
      if (!op) continue;
      const { params, body } = inputsOf(op);
      const input = { ...(body as object), ...Object.fromEntries(params.map((p) => [p.name, p.value])) };
      for (const path of strings(input)) {
        const field = path.join(".");
        for (const batch of [false, true]) {
          const before = await written();
          const answer = await trpc(name, procedure._def.type, withNul(input, path), batch);
          await refused(`trpc ${name} ${field}${batch ? " (batch)" : ""}`, answer, field, before);
          tried++;
        }
      }
    }
    expect(tried).toBeGreaterThan(60);
  }, 300_000);
});

/** A NUL-bearing body for each Tinker route that reads one (null: the route reads no body), and its field. */
function tinkerBodies(): Record<string, { body: unknown; field: string } | null> {
  const n = (s: string) => `${s}${NUL}`;
  const prompt = { chunks: [{ type: "encoded_text", tokens: [1, 2] }] };
  return {
    "POST client/config": null,
    "POST client/dynamic_config": null,
    "POST auth/token": null,
    "POST telemetry": null,
    "POST create_session": { body: { tags: [n("t")], sdk_version: "0.25.0" }, field: "tags.0" },
    "POST session_heartbeat": { body: { session_id: n(sessionId) }, field: "session_id" },
    "POST create_model": {
      body: { session_id: sessionId, base_model: BASE, user_metadata: { [n("k")]: "v" } },
      field: "user_metadata.k\\u0000",
    },
    "POST get_info": { body: { model_id: n(modelId) }, field: "model_id" },
    "POST unload_model": { body: { model_id: n(modelId) }, field: "model_id" },
    "POST forward_backward": {
      body: { model_id: n(modelId), forward_backward_input: { data: [], loss_fn: "cross_entropy" } },
      field: "model_id",
    },
    "POST forward": {
      body: { model_id: modelId, forward_input: { data: [], loss_fn: n("cross_entropy") } },
      field: "forward_input.loss_fn",
    },
    "POST optim_step": { body: { model_id: n(modelId), adam_params: {} }, field: "model_id" },
    "POST save_weights_for_sampler": { body: { model_id: n(modelId) }, field: "model_id" },
    "POST save_weights": { body: { model_id: modelId, path: n("w") }, field: "path" },
    "POST load_weights": {
      body: { model_id: modelId, path: `tinker://${n(modelId)}/weights/w`, optimizer: false },
      field: "path",
    },
    "POST weights_info": { body: { tinker_path: `tinker://${n(modelId)}/weights/w` }, field: "tinker_path" },
    "POST create_sampling_session": {
      body: { session_id: n(sessionId), base_model: BASE },
      field: "session_id",
    },
    "POST asample": {
      body: { sampling_session_id: n("s"), prompt, sampling_params: { max_tokens: 1 } },
      field: "sampling_session_id",
    },
    "POST retrieve_future": { body: { request_id: n("r") }, field: "request_id" },
    "POST training_runs/:run/checkpoints/:weights/:name/publish": null,
    "PUT training_runs/:run/checkpoints/:weights/:name/ttl": { body: { [n("ttl")]: 1 }, field: "ttl\\u0000" },
    "PUT sessions/:session/project": { body: { project_id: n("p") }, field: "project_id" },
  };
}

describe("a NUL byte on the Tinker front", () => {
  const detail = (answer: { status: number; body: { detail?: string } | null }) => ({
    status: answer.status,
    message: answer.body?.detail ?? "",
  });
  const fill = (pattern: string, broken: string | null) =>
    pattern
      .split("/")
      .map((part) => (part.startsWith(":") ? encodeURIComponent(part === broken ? `x${NUL}` : "x") : part))
      .join("/");

  it("is refused in every path parameter and query of every route, naming it", async () => {
    for (const route of ROUTES) {
      const options = { method: route.method };
      const params = route.pattern.split("/").filter((p) => p.startsWith(":"));
      for (const param of params) {
        const before = await written();
        const answer = await tinker(
          keyOf(team),
          fill(route.pattern, param),
          route.method === "GET" ? undefined : {},
          options,
        );
        await refused(`${route.method} ${route.pattern} ${param}`, detail(answer), param.slice(1), before);
      }
      const before = await written();
      const query = `${fill(route.pattern, null)}?access_scope=${encodeURIComponent(`owned${NUL}`)}`;
      const answer = await tinker(keyOf(team), query, route.method === "GET" ? undefined : {}, options);
      await refused(`${route.method} ${route.pattern} query`, detail(answer), "access_scope", before);
    }
  }, 120_000);

  it("is refused in a string of every body a route reads, JSON or protobuf, naming it", async () => {
    const bodies = tinkerBodies();
    for (const route of ROUTES.filter((r) => r.method !== "GET" && r.method !== "DELETE")) {
      const key = `${route.method} ${route.pattern}`;
      expect(key in bodies, `${key}: add a NUL-bearing body for it here`).toBe(true);
      const sample = bodies[key];
      if (!sample) continue;
      const before = await written();
      const answer = await tinker(keyOf(team), fill(route.pattern, null), sample.body, {
        method: route.method,
      });
      await refused(key, detail(answer), sample.field, before);
    }
    const protobufs: [Uint8Array, string][] = [
      [fwdBwdProto({ model_id: `${modelId}${NUL}`, seq_id: 0, data: [sftDatum([1, 2, 3])] }), "model_id"],
      [
        fwdBwdProto({ model_id: modelId, seq_id: 0, data: [sftDatum([1, 2, 3])], loss_fn: `ppo${NUL}` }),
        "loss_fn",
      ],
    ];
    for (const [protobufBody, field] of protobufs) {
      const before = await written();
      const answer = await tinker(keyOf(team), "forward_backward", undefined, { protobufBody });
      await refused(`protobuf ${field}`, detail(answer), field, before);
    }
  }, 120_000);
});

describe("a NUL byte on sign-in", () => {
  it("is refused in the email and the team, naming the field", async () => {
    const cases: [string, unknown, string][] = [
      ["/api/auth/sign-in", { email: `a${NUL}@example.com`, password: "secret" }, "email"],
      ["/api/auth/sign-in", { email: "a@example.com", password: "secret", teamSlug: `t${NUL}` }, "teamSlug"],
      ["/api/auth/team", { teamId: `t${NUL}` }, "teamId"],
    ];
    for (const [route, body, field] of cases) {
      const before = await written();
      const response = await fetch(`${cp.url}${route}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      const answer = {
        status: response.status,
        message: ((await response.json()) as { message: string }).message,
      };
      await refused(`${route} ${field}`, answer, field, before);
    }
  });
});
