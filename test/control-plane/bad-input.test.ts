// Bad input over HTTP: refused with a 4xx whose message names what was wrong,
// and nothing written.
import { publishSnapshot, registerBaseModel } from "@opentinker/db";
import { describeBaseModel } from "@opentinker/engine";
import { builtInModel } from "@opentinker/models";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

const VL = "opentinker-vl-tiny";

let cp: ControlPlane;
let team: Team;
let adapterId = "";
let vocab = 0;

const tokens = (t: number[]) => ({ chunks: [{ type: "encoded_text", tokens: t }] });
const tensor = (dtype: string, data: number[]) => ({ dtype, data });
/** A valid rollout datum for a two-token prompt. */
const rollout = {
  modelInput: tokens([1, 2]),
  lossFnInputs: {
    targetTokens: tensor("int64", [2, 3]),
    logprobs: tensor("float32", [0, 0]),
    advantages: tensor("float32", [1, 1]),
    mask: tensor("float32", [1, 1]),
  },
};

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
  await registerBaseModel(cp.t.db, await describeBaseModel(VL, builtInModel(VL).dir));
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
      [
        "POST",
        "/v1/sampling/sample",
        {
          policy: { baseModel: BASE },
          prompt: tokens([1]),
          params: { maxTokens: 1 },
          topkPromptLogprobs: 21,
        },
        400,
        /^topkPromptLogprobs: .*20/,
      ],
      [
        "POST",
        "/v1/sampling/sample",
        { policy: { baseModel: BASE }, prompt: tokens([1]), params: { maxTokens: 1 }, promptLogprobs: "yes" },
        400,
        /^promptLogprobs: /,
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

  it("is checked against the base model and the adapter's own checkpoints before anything is queued", async () => {
    const before = await written();
    const context = (await cp.t.db.baseModel.findUniqueOrThrow({ where: { name: BASE } })).contextLength;
    const image = { type: "image", format: "png", data: "iVBORw0KGgo=", expectedTokens: 4 };
    const ce = (length: number) => ({
      modelInput: tokens(Array.from({ length }, (_, i) => i % vocab)),
      lossFnInputs: {
        targetTokens: tensor(
          "int64",
          Array.from({ length }, () => 1),
        ),
        weights: tensor(
          "float32",
          Array.from({ length }, () => 1),
        ),
      },
    });
    const sample = (prompt: unknown, policy: unknown = { baseModel: BASE }) => ({
      policy,
      prompt,
      params: { maxTokens: 2 },
    });
    const path = `opentinker://${team.slug}/${adapterId}/state/never-saved`;
    const cases: [string, unknown, number, RegExp][] = [
      [
        "/v1/training/forward-backward",
        { adapterId, data: [rollout], lossFn: "ppo", lossFnConfig: { clipLowThreshold: 1.5 } },
        400,
        /^lossFnConfig\.clipLowThreshold: 1\.5 exceeds clipHighThreshold 1\.2/,
      ],
      [
        "/v1/training/forward-backward",
        {
          adapterId,
          data: [rollout],
          lossFn: "ppo",
          lossFnConfig: { clipLowThreshold: 0.9, clipHighThreshold: 0.5 },
        },
        400,
        /^lossFnConfig\.clipLowThreshold: /,
      ],
      [
        "/v1/training/forward-backward",
        {
          adapterId,
          data: [{ ...ce(2), modelInput: { chunks: [image, ...tokens([1, 2]).chunks] } }],
          lossFn: "cross_entropy",
        },
        400,
        /^data\.0\.modelInput\.chunks\.0: is an image, but the base model tiny takes no images/,
      ],
      [
        "/v1/training/forward-backward",
        { adapterId, data: [ce(context + 1)], lossFn: "cross_entropy" },
        400,
        new RegExp(`^data\\.0\\.modelInput: has ${context + 1} positions; at most ${context} fit`),
      ],
      [
        "/v1/sampling/sample",
        sample({ chunks: [image] }),
        400,
        /^prompt\.chunks\.0: is an image, but the base model tiny/,
      ],
      [
        "/v1/sampling/sample",
        sample({ chunks: [{ ...image, expectedTokens: 3 }] }, { baseModel: VL }),
        400,
        /^prompt\.chunks\.0\.expectedTokens: is 3, but the base model opentinker-vl-tiny gives an image \d+ positions/,
      ],
      ["/v1/sampling/sample", sample({ chunks: [] }), 400, /^prompt: is empty/],
      ["/v1/sampling/sample", sample(tokens([])), 400, /^prompt: is empty/],
      [
        "/v1/sampling/sample",
        sample(tokens(Array.from({ length: context }, () => 1))),
        400,
        new RegExp(`^prompt: has ${context} positions; at most ${context - 1} fit`),
      ],
      [
        "/v1/sampling/compute-logprobs",
        { policy: { baseModel: BASE }, sequence: tokens([1]) },
        400,
        /^sequence: has 1 positions; needs at least 2/,
      ],
      [
        "/v1/sampling/compute-logprobs",
        { policy: { baseModel: BASE }, sequence: tokens(Array.from({ length: 16_384 }, () => 1)) },
        400,
        /^sequence: has 16384 positions; at most \d+ fit/,
      ],
      ["/v1/training/save-state", { adapterId, name: "../escape" }, 400, /^name: /],
      ["/v1/training/save-state", { adapterId, name: "a/b" }, 400, /^name: /],
      ["/v1/training/save-state", { adapterId, name: 'quote"d' }, 400, /^name: /],
      ["/v1/training/save-state", { adapterId, name: "a..b" }, 400, /^name: must not contain '\.\.'/],
      ["/v1/training/save-weights-for-sampler", { adapterId, name: "../x" }, 400, /^name: /],
      ["/v1/training/load-state", { adapterId, path: "/etc/passwd" }, 400, /^path: expected opentinker:\/\//],
      [
        "/v1/training/load-state",
        { adapterId, path: `opentinker://${team.slug}/${adapterId}/state/../../etc` },
        400,
        /^path: /,
      ],
      ["/v1/training/load-state", { adapterId, path }, 404, /^checkpoint .* not found/],
    ];
    for (const [route, body, status, message] of cases) {
      const response = await cp.api<{ message: string }>(team.key, "POST", route, body);
      expect(response.status, `${route} ${JSON.stringify(body).slice(0, 120)}`).toBe(status);
      expect(response.body.message, route).toMatch(message);
    }
    expect(await written()).toEqual(before);
  });

  it("reports a vision-language base model as such, with the positions an image takes", async () => {
    const models = await cp.api<{ name: string; visionLanguage: boolean; imageTokens: number | null }[]>(
      team.key,
      "GET",
      "/v1/models",
    );
    expect(models.body.find((m) => m.name === VL)).toMatchObject({ visionLanguage: true, imageTokens: 16 });
    expect(models.body.find((m) => m.name === BASE)).toMatchObject({
      visionLanguage: false,
      imageTokens: null,
    });
  });

  it("refuses a job bigger than the team's quota allows, naming the field and the limit", async () => {
    const before = await written();
    const env = await cp.t.db.environment.create({
      data: { teamId: team.id, name: "quota-env", kind: "BUILTIN", builtin: "arithmetic" },
    });
    const rl = (config: object) => ({ kind: "RL", adapterId, environmentId: env.id, config });
    const cases: [object, RegExp][] = [
      [
        rl({ steps: 10, groupsPerStep: 1024, groupSize: 256 }),
        /^config\.groupsPerStep × config\.groupSize: the job would take 262144, more than the team's maxSequencesPerStep \(512\)/,
      ],
      [
        rl({ steps: 100_000 }),
        /^config\.steps: the job would take 100000, more than the team's maxJobSteps \(10000\)/,
      ],
      [
        rl({ steps: 10, validation: { every: 1, groups: 1000 } }),
        /^config\.validation\.groups × config\.validation\.groupSize: the job would take 1000/,
      ],
      [
        { kind: "EVAL", adapterId, environmentId: env.id, config: { groups: 4096, groupSize: 256 } },
        /^config\.groups × config\.groupSize: /,
      ],
      [
        {
          kind: "SFT",
          adapterId,
          config: {
            conversations: [{ messages: [{ role: "user", content: "hi" }] }],
            epochs: 1000,
            batchSize: 4096,
          },
        },
        /^config\.batchSize: the job would take 4096/,
      ],
      [
        { kind: "EVAL", adapterId, environmentId: env.id, config: { handle: "not-a-handle" } },
        /^config\.handle: /,
      ],
    ];
    for (const [body, message] of cases) {
      const response = await cp.api<{ message: string }>(team.key, "POST", "/v1/jobs", body);
      expect(response.status, JSON.stringify(body).slice(0, 100)).toBe(400);
      expect(response.body.message).toMatch(message);
    }
    await cp.t.db.environment.delete({ where: { id: env.id } });
    expect((await written()).slice(0, 3)).toEqual(before.slice(0, 3));
  });

  it("takes a KL reference only from the team's snapshots over the adapter's base model", async () => {
    const other = await cp.team("bad-other");
    const publish = async (owner: Team, baseModel: string) => {
      const made = await cp.api<{ id: string }>(owner.key, "POST", "/v1/adapters", {
        name: "ref",
        baseModel,
        rank: 2,
      });
      const stored = { path: "snapshots/never-read", checksum: "0".repeat(64), trainerStep: 0 };
      return (await publishSnapshot(cp.t.db, owner.id, { adapterId: made.body.id, ...stored })).handle;
    };
    const [theirs, overVl] = [await publish(other, BASE), await publish(team, VL)];
    const unknown = `opentinker://${team.slug}/${adapterId}/sampler/99`;
    const env = await cp.t.db.environment.create({
      data: { teamId: team.id, name: "ref-env", kind: "BUILTIN", builtin: "arithmetic" },
    });
    const before = await written();
    const fb = (lossFnConfig: object) => ({ adapterId, data: [rollout], lossFn: "ppo", lossFnConfig });
    const job = (config: object) => ({
      kind: "RL",
      adapterId,
      environmentId: env.id,
      config: { steps: 1, ...config },
    });
    const cases: [string, object, number, string | RegExp][] = [
      [
        "/v1/training/forward-backward",
        fb({ referenceKl: 0.1, referenceModel: theirs }),
        404,
        `snapshot ${theirs} not found`,
      ],
      [
        "/v1/training/forward-backward",
        fb({ referenceKl: 0.1, referenceModel: unknown }),
        404,
        `snapshot ${unknown} not found`,
      ],
      [
        "/v1/training/forward-backward",
        fb({ referenceKl: 0.1, referenceModel: overVl }),
        400,
        new RegExp(
          `^lossFnConfig\\.referenceModel: ${overVl} is a snapshot over ${VL}, not the adapter's base model ${BASE}`,
        ),
      ],
      [
        "/v1/training/forward-backward",
        fb({ referenceModel: unknown }),
        400,
        /^lossFnConfig\.referenceModel: names the reference of referenceKl, which is 0/,
      ],
      ["/v1/jobs", job({ referenceKl: 0.1, referenceModel: theirs }), 404, `snapshot ${theirs} not found`],
      [
        "/v1/jobs",
        job({ referenceKl: 0.1, referenceModel: overVl }),
        400,
        /^config\.referenceModel: .* is a snapshot over another base model/,
      ],
      [
        "/v1/jobs",
        job({ referenceModel: unknown }),
        400,
        /^config\.referenceModel: names the reference of referenceKl/,
      ],
    ];
    for (const [route, body, status, message] of cases) {
      const response = await cp.api<{ message: string }>(team.key, "POST", route, body);
      expect(response.status, `${route} ${JSON.stringify(body).slice(0, 160)}`).toBe(status);
      expect(response.body.message, route).toMatch(message);
    }
    expect(await written()).toEqual(before);
    await cp.t.db.environment.delete({ where: { id: env.id } });
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
      data: { name: "test job", teamId: team.id, adapterId, kind: "SFT", config: {}, status: "SUCCEEDED" },
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
