// The scheduler alone, driven with fake requests and a fake "model" that answers
// every row with token 1: no weights, no logits.
import { describe, expect, it } from "vitest";
import { KvCacheManager } from "./kv-cache.ts";
import { type ScheduledRequest, Scheduler, type StepPlan } from "./scheduler.ts";

interface FakeCompletion {
  id: string;
  tokens: number[];
  stopReason: "stop" | "length" | null;
  /** It stops with "length" once it has this many tokens. */
  maxTokens: number;
}

interface FakeRequest extends ScheduledRequest {
  completions: FakeCompletion[];
}

let nextId = 0;

/** A request with one completion per entry of `maxTokens`; prompts differ, so no prefix is shared. */
function request(tenant: string, promptLength: number, maxTokens: number[] = [4]): FakeRequest {
  const id = `q${nextId++}`;
  return {
    id,
    tenant,
    policyKey: "p",
    prompt: Array.from({ length: promptLength }, (_, i) => (nextId * 97 + i) % 5000),
    images: [],
    completions: maxTokens.map((max, i) => ({
      id: `${id}/${i}`,
      tokens: [],
      stopReason: null,
      maxTokens: max,
    })),
    state: { kind: "waiting" },
  };
}

function scheduler(numBlocks: number, maxTokensPerStep = 64, blockSize = 4) {
  const kv = new KvCacheManager({ numBlocks, blockSize });
  return { kv, s: new Scheduler<FakeRequest>(kv, maxTokensPerStep) };
}

/** Plans and "runs" one step as the sampler's front does; returns the plan and the requests it finished. */
function step(s: Scheduler<FakeRequest>) {
  const plan: StepPlan<FakeRequest> = s.plan();
  const done = [...plan.finished];
  if (plan.preempted) for (const c of plan.preempted.completions) [c.tokens, c.stopReason] = [[], null];
  const advance = (r: FakeRequest, c: FakeCompletion) => {
    c.tokens.push(1);
    c.stopReason = c.tokens.length >= c.maxTokens ? "length" : null;
    if (s.advanced(r, c)) done.push(r);
  };
  for (const { request: r, output } of plan.rows) {
    if (output.kind === "decode") advance(r, output.completion);
    if (output.kind !== "prompt") continue;
    s.prefilled(r);
    for (const c of r.completions) advance(r, c);
  }
  s.committed(plan.rows);
  return { plan, done };
}

/** Steps until nothing is left to do. */
function drain(s: Scheduler<FakeRequest>, limit = 200) {
  const plans: StepPlan<FakeRequest>[] = [];
  for (let i = 0; i < limit; i++) {
    const { plan } = step(s);
    plans.push(plan);
    if (plan.rows.length === 0 && !plan.preempted && plan.finished.length === 0) return plans;
  }
  throw new Error("the scheduler did not drain");
}

describe("the scheduler", () => {
  it("a scored prompt skips the prefix cache and wants logits of every row that predicts a prompt token", () => {
    const { s, kv } = scheduler(64, 8);
    // Positions 3–4 are an image: the rows before them predict no prompt token.
    const images = [{ start: 3, length: 2, hash: "img" }];
    const plain = { ...request("t", 10, [1]), images };
    s.enqueue(plain);
    drain(s);
    const hits = kv.stats().promptCacheHitTokens;
    // The same prompt again, scored: computed whole although its blocks are cached.
    const scored: FakeRequest = { ...request("t", 10, [1]), prompt: plain.prompt, images, scorePrompt: true };
    s.enqueue(scored);
    const kinds = drain(s).flatMap((plan) => plan.rows.map((row) => row.output.kind));
    expect(kinds).toEqual([
      "score",
      "score",
      "none",
      "none",
      "score",
      "score",
      "score",
      "score",
      "score",
      "prompt",
    ]);
    expect(kv.stats().promptCacheHitTokens).toBe(hits);
    // An unscored call of the same prompt still hits the cache.
    s.enqueue({ ...request("t", 10, [1]), prompt: plain.prompt, images });
    drain(s);
    expect(kv.stats().promptCacheHitTokens).toBe(hits + 8);
  });

  it("takes a request from waiting through one prefill, a fork and decode to done", () => {
    const { s, kv } = scheduler(32);
    const r = request("t", 6, [3, 3, 3]);
    s.enqueue(r);
    const first = step(s).plan;
    expect(first.rows.map((row) => row.output.kind)).toEqual([
      "none",
      "none",
      "none",
      "none",
      "none",
      "prompt",
    ]);
    expect(r.state.kind).toBe("forking");
    const second = step(s).plan;
    expect(r.state.kind).toBe("decode");
    expect(second.rows.map((row) => row.seqId)).toEqual(r.completions.map((c) => c.id));
    expect(second.rows.map((row) => row.position)).toEqual([6, 6, 6]);
    const { done } = step(s);
    expect(done).toEqual([r]);
    expect(r.state.kind).toBe("done");
    expect(r.completions.map((c) => c.tokens.length)).toEqual([3, 3, 3]);
    expect(s.stats()).toEqual({ waiting: 0, active: 0, prefillTokens: 6 });
    expect(kv.stats().usedBlocks).toBe(0);
  });

  it("a request whose completions all stop on their first token finishes at the fork, with no decode row", () => {
    const { s, kv } = scheduler(16);
    const r = request("t", 5, [1, 1]);
    s.enqueue(r);
    step(s);
    const { plan } = step(s);
    expect(plan.finished).toEqual([r]);
    expect(plan.rows).toEqual([]);
    expect(plan.preempted).toBeUndefined();
    expect(kv.stats().usedBlocks).toBe(0);
  });

  it("a completion that stopped gets no more rows while the others decode", () => {
    const { s } = scheduler(16);
    const r = request("t", 3, [1, 4]);
    s.enqueue(r);
    step(s);
    const decode = step(s).plan.rows;
    expect(decode.map((row) => row.seqId)).toEqual([`${r.id}/1`]);
  });

  it("admission takes turns across tenants: one tenant's queue does not hold back another's request", () => {
    // Room for three one-block prompts (each keeps a block free for its first token).
    const { s } = scheduler(4);
    const big = Array.from({ length: 5 }, () => request("big", 4));
    const small = request("small", 4);
    for (const r of [...big, small]) s.enqueue(r);
    const { plan } = step(s);
    const admitted = [...new Set(plan.rows.map((row) => row.request))];
    // Admitted in turns big, small, big: the small request is in, big's third is not.
    expect(new Set(admitted)).toEqual(new Set([big[0], small, big[1]]));
    expect(s.stats()).toMatchObject({ waiting: 3, active: 3 });
  });

  it("decode rows come first; the rest of the budget is split evenly across the tenants prefilling", () => {
    const { s } = scheduler(64, 9);
    const decoding = request("a", 2, [10]);
    s.enqueue(decoding);
    step(s);
    step(s);
    const [b, c] = [request("b", 20), request("c", 20)];
    s.enqueue(b);
    s.enqueue(c);
    const rows = step(s).plan.rows;
    expect(rows).toHaveLength(9);
    expect(rows[0]?.request).toBe(decoding);
    expect(rows[0]?.output.kind).toBe("decode");
    const prefillOf = (r: FakeRequest) => rows.filter((row) => row.request === r).length;
    expect([prefillOf(b), prefillOf(c)].sort()).toEqual([4, 4]);
  });

  it("a long prompt is prefilled in chunks of the step budget", () => {
    const { s } = scheduler(64, 8);
    const r = request("t", 20);
    s.enqueue(r);
    const chunks = [step(s), step(s), step(s)].map(({ plan }) => plan.rows.map((row) => row.position));
    expect(chunks).toEqual([
      [0, 1, 2, 3, 4, 5, 6, 7],
      [8, 9, 10, 11, 12, 13, 14, 15],
      [16, 17, 18, 19],
    ]);
    expect(r.state.kind).toBe("forking");
  });

  it("when nothing can run, the newest active request is preempted, restarts later, and everything finishes", () => {
    // Two requests that each need 3 blocks, in a cache of 4.
    const { s, kv } = scheduler(4);
    const [first, second] = [request("t", 4, [8]), request("t", 4, [8])] as [FakeRequest, FakeRequest];
    s.enqueue(first);
    s.enqueue(second);
    const plans = drain(s);
    const preempted = plans.flatMap((p) => (p.preempted ? [p.preempted] : []));
    expect(preempted[0]).toBe(second);
    for (const r of [first, second]) {
      expect(r.state.kind).toBe("done");
      expect(r.completions[0]?.tokens).toHaveLength(8);
    }
    expect(kv.stats().usedBlocks).toBe(0);
  });

  it("a removed request frees its blocks wherever it stands", () => {
    const { s, kv } = scheduler(16);
    const [prefilling, waiting] = [request("t", 12), request("t", 4)];
    s.enqueue(prefilling);
    step(s);
    s.enqueue(waiting);
    s.remove(prefilling);
    s.remove(waiting);
    expect(prefilling.state.kind).toBe("done");
    expect(s.stats()).toMatchObject({ waiting: 0, active: 0 });
    expect(kv.stats().usedBlocks).toBe(0);
    expect(s.plan()).toEqual({ rows: [], copies: [], finished: [], preempted: undefined });
  });
});
