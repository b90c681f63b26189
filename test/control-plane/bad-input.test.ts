// Bad input over HTTP: refused with a 4xx whose message names what was wrong,
// and nothing written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

let cp: ControlPlane;
let team: Team;
let adapterId = "";
let vocab = 0;

const tokens = (t: number[]) => ({ chunks: [{ type: "encoded_text", tokens: t }] });
const tensor = (dtype: string, data: number[]) => ({ dtype, data });

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("bad");
  const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
    name: "a",
    baseModel: BASE,
    rank: 2,
  });
  adapterId = adapter.body.id;
  vocab = (await cp.t.db.baseModel.findUniqueOrThrow({ where: { name: BASE } })).vocabSize;
}, 60_000);
afterAll(() => cp?.stop());

async function written() {
  const db = cp.t.db;
  return [
    await db.request.count(),
    await db.adapter.count(),
    await db.job.count(),
    await db.environment.count(),
  ];
}

describe("bad input over HTTP", () => {
  it("is refused with a message naming the field, and nothing is written", async () => {
    const before = await written();
    const fb = (data: unknown[]) => ({ adapterId, data, lossFn: "cross_entropy" });
    const cases: [string, string, unknown, number, RegExp][] = [
      ["POST", "/v1/training/forward-backward", "{not json", 400, /malformed JSON/],
      ["POST", "/v1/adapters", { name: "x", baseModel: BASE, rank: "eight" }, 400, /^rank: /],
      [
        "POST",
        "/v1/adapters",
        { name: "x", baseModel: "no-such-model", rank: 2 },
        400,
        /baseModel: unknown base model/,
      ],
      ["POST", "/v1/adapters", { name: "x", baseModel: BASE, rank: 2, extra: 1 }, 400, /extra|Unrecognized/],
      [
        "POST",
        "/v1/training/forward-backward",
        fb([
          {
            modelInput: tokens([1, vocab + 5]),
            lossFnInputs: { targetTokens: tensor("int64", [1, 2]), weights: tensor("float32", [1, 1]) },
          },
        ]),
        400,
        /data\.0\.modelInput\.chunks\.0\.tokens\.1: token id \d+ is out of range/,
      ],
      [
        "POST",
        "/v1/training/forward-backward",
        fb([
          {
            modelInput: tokens([1, 2, 3]),
            lossFnInputs: { targetTokens: tensor("int64", [2, 3]), weights: tensor("float32", [1, 1, 1]) },
          },
        ]),
        400,
        /data\.0\.lossFnInputs\.targetTokens: has 2 values, the model input has 3 positions/,
      ],
      [
        "POST",
        "/v1/training/forward-backward",
        fb([{ modelInput: tokens([1, 2]), lossFnInputs: { targetTokens: tensor("int64", [2, 3]) } }]),
        400,
        /data\.0\.lossFnInputs\.weights: is required by the cross_entropy loss/,
      ],
      [
        "POST",
        "/v1/training/forward-backward",
        fb([
          {
            modelInput: tokens([1, 2]),
            lossFnInputs: { targetTokens: tensor("int64", [2, vocab]), weights: tensor("float32", [1, 1]) },
          },
        ]),
        400,
        /targetTokens\.data\.1: token id \d+ is out of range/,
      ],
      ["POST", "/v1/training/forward-backward", fb([]), 400, /^data: needs at least one datum/],
      [
        "POST",
        "/v1/sampling/sample",
        { policy: { baseModel: BASE }, prompt: tokens([vocab]), params: { maxTokens: 2 } },
        400,
        /prompt\.chunks\.0\.tokens\.0: token id \d+ is out of range/,
      ],
      [
        "POST",
        "/v1/sampling/sample",
        { policy: { baseModel: BASE }, prompt: tokens([1]), params: { maxTokens: -1 } },
        400,
        /^params\.maxTokens: /,
      ],
      [
        "POST",
        "/v1/sampling/sample",
        { policy: { handle: "nope" }, prompt: tokens([1]), params: { maxTokens: 1 } },
        400,
        /^policy/,
      ],
      ["POST", "/v1/environments", { name: "e", kind: "BUILTIN", builtin: "chess" }, 400, /^builtin: /],
      [
        "POST",
        "/v1/environments",
        { name: "e", kind: "REMOTE", url: "http://evil.example.com/env" },
        400,
        /^url: host evil\.example\.com is not on the allow-list/,
      ],
      ["POST", "/v1/jobs", { kind: "RL", adapterId, config: { steps: 0 } }, 400, /steps|environmentId/],
      [
        "POST",
        "/v1/training/optim-step",
        { adapterId, adam: { learningRate: -1 } },
        400,
        /^adam\.learningRate: /,
      ],
    ];
    for (const [method, route, body, status, message] of cases) {
      const response = await cp.api<{ message: string }>(team.key, method, route, body);
      expect(response.status, `${route} ${JSON.stringify(body).slice(0, 80)}`).toBe(status);
      expect(response.body.message, route).toMatch(message);
    }
    expect(await written()).toEqual(before);
  });

  it("takes JSON types as they are: no string, array or null becomes a number or a boolean", async () => {
    const before = await written();
    const adapter = (extra: object) => ({ name: "strict", baseModel: BASE, rank: 2, ...extra });
    const cases: [object, RegExp][] = [
      [adapter({ trainAttn: "false" }), /^trainAttn: /],
      [adapter({ trainUnembed: "no" }), /^trainUnembed: /],
      [adapter({ rank: "0x10" }), /^rank: /],
      [adapter({ rank: ["12"] }), /^rank: /],
      [adapter({ rank: "16" }), /^rank: /],
      [adapter({ seed: null }), /^seed: /],
      [adapter({ trainMlp: 1 }), /^trainMlp: /],
    ];
    for (const [body, message] of cases) {
      const response = await cp.api<{ message: string }>(team.key, "POST", "/v1/adapters", body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.body.message).toMatch(message);
    }
    const fb = await cp.api<{ message: string }>(team.key, "POST", "/v1/training/optim-step", {
      adapterId,
      adam: { learningRate: "0.1" },
    });
    expect(fb.status).toBe(400);
    expect(fb.body.message).toMatch(/^adam\.learningRate: /);
    expect(await written()).toEqual(before);
  });

  it("parses query strings strictly: decimal numbers, and booleans spelled true or false", async () => {
    const job = await cp.t.db.job.create({
      data: { teamId: team.id, adapterId, kind: "SFT", config: {}, status: "SUCCEEDED" },
    });
    const route = (query: string) => `/v1/jobs/${job.id}/trajectories?${query}`;
    expect((await cp.api(team.key, "GET", route("step=0&decode=false"))).status).toBe(200);
    for (const [query, field] of [
      ["step=0&decode=no", "decode"],
      ["step=0&decode=1", "decode"],
      ["step=0x0", "step"],
      ["step=", "step"],
      ["step=0&step=1", "step"],
    ] as const) {
      const response = await cp.api<{ message: string }>(team.key, "GET", route(query));
      expect(response.status, query).toBe(400);
      expect(response.body.message, query).toMatch(new RegExp(`^${field}: `));
    }
    await cp.t.db.job.delete({ where: { id: job.id } });
  });

  it("refuses deeply nested bodies on every kind of route with 400 naming the field, unparsed", async () => {
    const before = await written();
    const deep = (levels: number) => `${"[".repeat(levels)}${"]".repeat(levels)}`;
    const rest = await cp.api<{ message: string }>(
      team.key,
      "POST",
      "/v1/training/forward-backward",
      `{"adapterId":"${adapterId}","lossFn":"cross_entropy","data":${deep(5000)}}`,
    );
    expect(rest.status).toBe(400);
    expect(rest.body.message).toMatch(/^data\.0\.0\.0: nested deeper than 64 levels/);
    const trpc = await fetch(`${cp.url}/api/trpc/adapters.create`, {
      method: "POST",
      headers: { authorization: `Bearer ${team.key}`, "content-type": "application/json" },
      body: `{"name":${deep(5000)}}`,
    });
    expect(trpc.status).toBe(400);
    expect(((await trpc.json()) as { error: { message: string } }).error.message).toMatch(
      /^name\.0\.0\.0: nested/,
    );
    const auth = await fetch(`${cp.url}/api/auth/sign-in`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: `{"email":${deep(5000)}}`,
    });
    expect(auth.status).toBe(400);
    expect(((await auth.json()) as { message: string }).message).toMatch(/^email\.0\.0\.0: nested/);
    expect(await written()).toEqual(before);
  });

  it("refuses an oversized payload with 413 before reading it all", async () => {
    const before = await written();
    const huge = JSON.stringify({
      adapterId,
      lossFn: "cross_entropy",
      data: [],
      pad: "x".repeat(33 * 1024 * 1024),
    });
    const response = await cp.api<{ message: string }>(
      team.key,
      "POST",
      "/v1/training/forward-backward",
      huge,
    );
    expect(response.status).toBe(413);
    expect(response.body.message).toMatch(/limit/);
    expect(await written()).toEqual(before);
  });

  it("refuses a body that is not JSON with 415, on the API and the auth routes", async () => {
    for (const route of ["/api/v1/adapters", "/api/auth/sign-in", "/api/trpc/adapters.create"]) {
      const response = await fetch(`${cp.url}${route}`, {
        method: "POST",
        headers: { authorization: `Bearer ${team.key}`, "content-type": "text/plain" },
        body: JSON.stringify({ name: "x", email: "a@b.c", password: "12345678" }),
      });
      expect(response.status, route).toBe(415);
    }
  });
});
