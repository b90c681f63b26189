// node --import tsx packages/models/src/experiments/sft-holdout.ts [seed] [learning rates, comma-separated] [SFT steps] [KL weights to the base, comma-separated]
// A diagnostic for docs/results.md (arithmetic-full-sft-rl), on the training
// split only: its problems are cut in two halves at random (by `seed`); the
// setting's SFT phase trains on right answers to one half, at each learning
// rate, and the policy is then sampled on the other half, problems SFT never
// saw, as the held-out split is. It reports the right and the malformed
// answers there before and after SFT: whether SFT teaches the task or only the
// answers it was shown, and what it does to the format elsewhere.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import {
  ArithmeticEnv,
  type ArithmeticTask,
  arithmeticKey,
  everyArithmeticTask,
  seededRandom,
  splitOf,
} from "@opentinker/envs";
import type { SamplingClient } from "@opentinker/protocol";
import { evaluate, type RendererTokenizer, type RlDataset } from "@opentinker/sdk";
import { DEFAULT_TEXT_MODEL } from "../registry.ts";
import { malformedRate } from "./malformed-inputs.ts";
import { loadExperimentModel } from "./run.ts";
import { arithmeticSftExamples, SETTINGS } from "./settings.ts";
import { runSftPhase } from "./train-setting.ts";

const seed = Number(process.argv[2] ?? 1);
const rates = (process.argv[3] ?? "5e-4,2e-4,1e-4").split(",").map(Number);
const phase = SETTINGS["arithmetic-full-sft-rl"]?.sft;
const steps = Number(process.argv[4] ?? phase?.steps);
const kls = (process.argv[5] ?? String(phase?.referenceKl ?? 0)).split(",").map(Number);
if (
  !phase ||
  !Number.isInteger(seed) ||
  rates.some((r) => !(r > 0)) ||
  kls.some((k) => !(k >= 0)) ||
  !(Number.isInteger(steps) && steps > 0)
)
  throw new RangeError(
    "usage: sft-holdout.ts [seed] [learning rates > 0, comma-separated] [SFT steps > 0] [KL weights ≥ 0, comma-separated]",
  );
const sft = { ...phase, steps };
/** Attempts per unseen problem. */
const ATTEMPTS = 4;

/** Every unseen problem, `ATTEMPTS` times, as one batch. */
function unseenDataset(tasks: readonly ArithmeticTask[], tokenizer: RendererTokenizer): RlDataset {
  return {
    batches: 1,
    batch: () =>
      tasks.map((task) => ({
        tag: "arithmetic",
        makeEnvs: async () => Array.from({ length: ATTEMPTS }, () => new ArithmeticEnv(task, tokenizer)),
      })),
  };
}

async function score(client: SamplingClient, version: number, dataset: RlDataset) {
  const { metrics } = await evaluate({ client, version }, dataset, { seed });
  return { right: metrics["val/env/correct"] ?? 0, malformed: malformedRate(metrics, "val/") };
}

const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-sft-holdout-"));
try {
  const base = await loadExperimentModel(DEFAULT_TEXT_MODEL, scratch);
  const tokenizer = base.tokenizer as RendererTokenizer;
  const random = seededRandom(seed * 4099 + 3);
  const shown = new Set<string>();
  const tasks = everyArithmeticTask().filter((t) => splitOf(arithmeticKey(t)) === "train");
  for (const task of tasks) if (random() < 0.5) shown.add(arithmeticKey(task));
  const unseen = tasks.filter((t) => !shown.has(arithmeticKey(t)));
  const dataset = unseenDataset(unseen, tokenizer);
  const svc = InProcessServiceClient.local([base], scratch, "diagnostic");
  const before = await score(await svc.createSamplingClient({ baseModel: base.name }), 0, dataset);
  const examples = await arithmeticSftExamples(tokenizer, seed, sft.steps * sft.batchSize, (t) =>
    shown.has(arithmeticKey(t)),
  );
  const after: Record<string, { right: number; malformed: number }> = {};
  for (const learningRate of rates)
    for (const referenceKl of kls) {
      const tc = await svc.createFullTrainingClient({ baseModel: base.name });
      await runSftPhase(tc, { ...sft, learningRate, referenceKl }, examples);
      const saved = await (await tc.saveWeightsForSampler("diagnostic")).result();
      const key = referenceKl ? `${learningRate} kl ${referenceKl}` : String(learningRate);
      after[key] = await score(await tc.createSamplingClient(saved.handle), saved.version, dataset);
    }
  const problems = { shown: shown.size, unseen: unseen.length, episodes: unseen.length * ATTEMPTS };
  console.log(JSON.stringify({ seed, steps, problems, before, after }, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
