import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import { ArithmeticEnv, type ArithmeticTask } from "@opentinker/envs";
import type { RendererTokenizer } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DEFAULT_TEXT_MODEL } from "../registry.ts";
import { loadRunPolicies, parseRunSnapshot, walkAnswers } from "./answer-tree.ts";
import { loadExperimentModel } from "./run.ts";

const TASK: ArithmeticTask = { a: 8, b: 3, op: "*", answer: 24 };
let scratch: string;
let walk: (reach?: number) => ReturnType<typeof walkAnswers>;
let tokenizer: RendererTokenizer;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "ot-tree-"));
  const base = await loadExperimentModel(DEFAULT_TEXT_MODEL, scratch);
  tokenizer = base.tokenizer as RendererTokenizer;
  const client = await InProcessServiceClient.local([base], scratch, "t").createSamplingClient({
    baseModel: base.name,
  });
  const { observation } = await new ArithmeticEnv(TASK, tokenizer).initialObservation();
  walk = (reach) => walkAnswers(client, tokenizer, observation, reach);
});
afterAll(() => rm(scratch, { recursive: true, force: true }));

const wellFormed = (tree: Awaited<ReturnType<typeof walkAnswers>>) =>
  tree.answers.reduce((sum, a) => sum + a.probability, 0);

describe("walkAnswers", () => {
  it("splits the answer's whole probability between malformed and answers the environment accepts", async () => {
    const tree = await walk();
    // Only branches under 1e-5 are left out, so the two add up to one.
    expect(tree.malformed + wellFormed(tree)).toBeCloseTo(1, 3);
    expect(tree.malformed).toBeGreaterThan(0);
    expect(tree.answers.some((a) => a.value === TASK.answer)).toBe(true);
    for (const answer of tree.answers) {
      const env = new ArithmeticEnv(TASK, tokenizer);
      await env.initialObservation();
      const { metrics } = await env.step(answer.tokens);
      expect(metrics).toMatchObject({ "format/malformed": 0, correct: answer.value === TASK.answer ? 1 : 0 });
    }
  });

  it("walks less of an unlikely context: branches are pruned by the whole path's probability", async () => {
    const [full, reached] = [await walk(), await walk(1e-3)];
    expect(reached.answers.length).toBeLessThan(full.answers.length);
    expect(reached.malformed + wellFormed(reached)).toBeLessThanOrEqual(1 + 1e-9);
  });
});

describe("loadRunPolicies", () => {
  it("refuses a run of another setting by name", async () => {
    const run = path.join(scratch, "nim-run");
    await mkdir(run);
    await writeFile(
      path.join(run, "summary.json"),
      JSON.stringify({ setting: "nim-selfplay-lora-rl", model: DEFAULT_TEXT_MODEL }),
    );
    await expect(loadRunPolicies(run, ["arithmetic-lora-rl"], scratch)).rejects.toThrow(
      "is a run of nim-selfplay-lora-rl, not of arithmetic-lora-rl",
    );
  });
});

describe("parseRunSnapshot", () => {
  it("reads best (the default) or end, and refuses anything else by name", () => {
    expect(parseRunSnapshot(undefined)).toBe("best");
    expect(parseRunSnapshot("end")).toBe("end");
    expect(() => parseRunSnapshot("last")).toThrow('--policy: "last" is not best or end');
  });
});
