// The schemas' bounds on LoRA alpha and learning rates: generous enough for
// every recipe we ship, and a refusal that names the field and the bound.
import { describe, expect, it } from "vitest";
import { ZCreateAdapterRequest } from "./adapters.ts";
import { ZOptimStepInput } from "./api.ts";
import { DivergedError, divergedAt, isNonFiniteError, nonFiniteMessage } from "./divergence.ts";
import { ZRlJobConfig, ZSftJobConfig } from "./jobs.ts";
import { ZAdamParams } from "./losses.ts";

const firstIssue = (r: {
  success: boolean;
  error?: { issues: { path: PropertyKey[]; message: string }[] };
}) => {
  const issue = r.error?.issues[0];
  return `${issue?.path.join(".")}: ${issue?.message}`;
};

describe("alpha", () => {
  const adapter = (alpha: number) => ZCreateAdapterRequest.safeParse({ name: "a", baseModel: "b", alpha });
  it("accepts the values recipes and tests use, up to the bound", () => {
    for (const alpha of [0.5, 4, 8, 16, 32, 1024]) expect(adapter(alpha).success, String(alpha)).toBe(true);
  });
  it("refuses a huge alpha, naming the field and the bound", () => {
    expect(firstIssue(adapter(1e30))).toBe("alpha: alpha must be at most 1024");
    expect(adapter(Number.POSITIVE_INFINITY).success).toBe(false);
  });
});

describe("learning rate", () => {
  it("accepts every learning rate recipes and tests use, up to the bound", () => {
    for (const learningRate of [0, 1e-5, 1e-4, 1.5e-3, 3e-3, 1e-2, 5e-2, 0.1, 1])
      expect(ZAdamParams.safeParse({ learningRate }).success, String(learningRate)).toBe(true);
  });
  it("refuses a huge learning rate in optim_step and in job configs, naming the field and the bound", () => {
    const message = "learningRate must be at most 1";
    expect(firstIssue(ZOptimStepInput.safeParse({ adapterId: "x", adam: { learningRate: 1e9 } }))).toBe(
      `adam.learningRate: ${message}`,
    );
    expect(firstIssue(ZRlJobConfig.safeParse({ steps: 3, adam: { learningRate: 1e9 } }))).toBe(
      `adam.learningRate: ${message}`,
    );
    const conversations = [{ messages: [{ role: "user", content: "hi" }] }];
    expect(firstIssue(ZSftJobConfig.safeParse({ conversations, adam: { learningRate: 2 } }))).toBe(
      `adam.learningRate: ${message}`,
    );
    // eps 0 turns a never-updated weight's 0/0 into NaN weights.
    expect(firstIssue(ZRlJobConfig.safeParse({ steps: 3, adam: { eps: 0 } }))).toBe(
      "adam.eps: eps must be greater than 0",
    );
    expect(ZOptimStepInput.safeParse({ adapterId: "x", adam: { eps: 1e-8 } }).success).toBe(true);
  });
});

describe("a non-finite refusal", () => {
  const refusal = new RangeError(nonFiniteMessage("optimStep", "gradient norm", Number.NaN, "not applied"));
  it("is recognised, also behind a remote client's prefix, and becomes 'diverged' at its step", () => {
    expect(isNonFiniteError(refusal)).toBe(true);
    expect(isNonFiniteError(new Error(`400: ${refusal.message}`))).toBe(true);
    const diverged = divergedAt(7, refusal);
    expect(diverged).toBeInstanceOf(DivergedError);
    expect(String(diverged)).toMatch(/diverged at step 7: optimStep: non-finite gradient norm \(NaN\)/);
  });
  it("leaves any other error as it was", () => {
    const other = new RangeError("optimStep: no gradients were accumulated since the last optimStep");
    expect(divergedAt(3, other)).toBe(other);
  });
});
