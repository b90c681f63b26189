// The dashboard's playground procedures through createCaller, with a dashboard
// session's caller, against the real database and a real worker: a prompt typed
// as text or a chat is sampled on the same path as `sampling.sample`, each token
// comes back with its logprob, another team's version answers like a missing
// one, and a refused call leaves no request behind.
import path from "node:path";
import { type AppRouter, type Caller, createCaller, createInnerContext } from "@opentinker/api";
import { RequestWaiter } from "@opentinker/db";
import { formatSamplerHandle, type PlaygroundOutcome } from "@opentinker/protocol";
import { loadTokenizer, type TextTokenizer } from "@opentinker/tokenizer";
import type { inferRouterInputs } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";

type SampleInput = inferRouterInputs<AppRouter>["playground"]["sample"];

let cp: ControlPlane;
let waiter: RequestWaiter;
let tokenizer: TextTokenizer;
let a: Team;
let b: Team;
let handleOfA = "";

/** The procedures as a signed-in member of the team sees them (a session, no API key). */
const sessionApi = (team: Team) => {
  const caller: Caller = {
    teamId: team.id,
    teamSlug: team.slug,
    apiKeyId: null,
    sessionId: `s-${team.slug}`,
  };
  return createCaller(createInnerContext({ db: cp.t.db, waiter, caller }));
};

/** The outcome once the call has finished (a busy worker may answer "pending" first). */
async function finished(team: Team, input: SampleInput) {
  const api = sessionApi(team);
  const sample = await api.playground.sample(input);
  let outcome: PlaygroundOutcome = sample.outcome;
  while (outcome.status === "PENDING")
    outcome = await api.playground.result({ requestId: sample.requestId, policy: input.policy });
  if (outcome.status !== "SUCCEEDED") throw new Error(`sample did not succeed: ${JSON.stringify(outcome)}`);
  return { ...sample, outcome };
}

const requestsOf = (team: Team) => cp.t.db.request.count({ where: { teamId: team.id } });

beforeAll(async () => {
  cp = await ControlPlane.start();
  waiter = new RequestWaiter(cp.t.db, cp.t.url);
  tokenizer = await loadTokenizer(path.join(cp.dir, "model"));
  a = await cp.team("play-a");
  b = await cp.team("play-b");
  await cp.startWorker();
  const adapter = await cp.api<{ id: string }>(a.key, "POST", "/v1/adapters", {
    name: "play-adapter",
    baseModel: BASE,
    rank: 2,
  });
  const saved = await cp.call<{ handle: string }>(a.key, "/v1/training/save-weights-for-sampler", {
    adapterId: adapter.body.id,
  });
  handleOfA = saved.handle;
}, 120_000);
afterAll(async () => {
  await waiter?.close();
  await cp?.stop();
});

describe("playground", () => {
  it("samples a text prompt from the base model with the API's sampler, every token with its logprob", async () => {
    const params = { maxTokens: 6, seed: 7, temperature: 1 };
    const played = await finished(a, {
      policy: { baseModel: BASE },
      prompt: { mode: "text", text: "hello world" },
      numSamples: 2,
      params,
    });
    const promptIds = tokenizer.encode("hello world");
    expect(played.prompt.map((t) => t.id)).toEqual(promptIds);
    expect(played.prompt.map((t) => t.piece).join("")).toBe(tokenizer.decode(promptIds));
    expect(played.outcome.sequences).toHaveLength(2);
    for (const s of played.outcome.sequences) {
      expect(s.tokens.length).toBeGreaterThan(0);
      expect(s.tokens.length).toBeLessThanOrEqual(6);
      for (const t of s.tokens) {
        expect(t.logprob).toBeLessThanOrEqual(0);
        expect(t.piece).toBe(tokenizer.decode([t.id]));
      }
      expect(s.text).toBe(
        tokenizer.decode(
          s.tokens.map((t) => t.id),
          { skipSpecialTokens: true },
        ),
      );
      expect(["stop", "length"]).toContain(s.stopReason);
    }

    // The same call through the API's own sampling procedure gives the same tokens and logprobs.
    const api = await cp.call<{ sequences: { tokens: number[]; logprobs: number[] }[] }>(
      a.key,
      "/v1/sampling/sample",
      {
        policy: { baseModel: BASE },
        prompt: { chunks: [{ type: "encoded_text", tokens: promptIds }] },
        numSamples: 2,
        params,
      },
    );
    expect(played.outcome.sequences.map((s) => s.tokens.map((t) => t.id))).toEqual(
      api.sequences.map((s) => s.tokens),
    );
    expect(played.outcome.sequences.map((s) => s.tokens.map((t) => t.logprob))).toEqual(
      api.sequences.map((s) => s.logprobs),
    );
  });

  it("renders a chat with the model's chat template, ending with the assistant's turn", async () => {
    const played = await finished(a, {
      policy: { handle: handleOfA },
      prompt: {
        mode: "chat",
        messages: [
          { role: "system", content: "Be brief." },
          { role: "user", content: "What is 2 + 3?" },
        ],
      },
      params: { maxTokens: 3, temperature: 0 },
    });
    const expected = tokenizer.encode(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nWhat is 2 + 3?<|im_end|>\n<|im_start|>assistant\n",
      { addSpecialTokens: false },
    );
    expect(played.prompt.map((t) => t.id)).toEqual(expected);
    expect(played.outcome.policyVersion).toBe(1);
    expect(played.outcome.sequences).toHaveLength(1);
  });

  it("answers another team's version exactly like a missing one, and queues nothing", async () => {
    const before = await requestsOf(b);
    const missingHandle = formatSamplerHandle({
      team: b.slug,
      adapter: "cmissing0000000000000000",
      version: 1,
    });
    for (const handle of [handleOfA, missingHandle])
      await expect(
        sessionApi(b).playground.sample({
          policy: { handle },
          prompt: { mode: "text", text: "hi" },
          params: { maxTokens: 2 },
        }),
      ).rejects.toMatchObject({ code: "NOT_FOUND", message: `policy ${handle} not found` });
    expect(await requestsOf(b)).toBe(before);

    // Nor can it read the other team's call.
    const theirs = await sessionApi(a).playground.sample({
      policy: { baseModel: BASE },
      prompt: { mode: "text", text: "hi" },
      params: { maxTokens: 1 },
    });
    for (const requestId of [theirs.requestId, "no-such-request"])
      await expect(
        sessionApi(b).playground.result({ requestId, policy: { baseModel: BASE } }),
      ).rejects.toMatchObject({ code: "NOT_FOUND", message: `sampling request ${requestId} not found` });
  });

  it("refuses bad settings, an unknown model and a prompt too long for the context, writing nothing", async () => {
    const api = sessionApi(a);
    const before = await requestsOf(a);
    const base = { policy: { baseModel: BASE }, prompt: { mode: "text", text: "hi" } } as const;
    const refusals: [SampleInput, RegExp][] = [
      [{ ...base, params: { maxTokens: 4, topP: 0 } }, /topP/],
      [{ ...base, params: { maxTokens: 0 } }, /maxTokens/],
      [{ ...base, params: { maxTokens: 4 }, numSamples: 0 }, /numSamples/],
      [{ ...base, prompt: { mode: "text", text: "" }, params: { maxTokens: 4 } }, /type a prompt/],
      [{ ...base, prompt: { mode: "chat", messages: [] }, params: { maxTokens: 4 } }, /at least one message/],
      [{ ...base, policy: { baseModel: "no-such-model" }, params: { maxTokens: 4 } }, /unknown base model/],
      [
        { ...base, prompt: { mode: "text", text: "hello ".repeat(2_000) }, params: { maxTokens: 4 } },
        /^prompt: has \d+ positions; at most \d+ fit the base model/,
      ],
    ];
    for (const [input, message] of refusals)
      await expect(api.playground.sample(input)).rejects.toMatchObject({ code: "BAD_REQUEST", message });
    expect(await requestsOf(a)).toBe(before);
  });
});
