// node --import tsx packages/models/src/experiments/nim-illegal-moves.ts [seed] [steps]
// A diagnostic for docs/results.md (nim): trains nim self-play as the
// nim-selfplay-lora-rl setting does, then plays the validation games against
// the random player and counts the illegal moves by position and token, so one
// can see where they come from.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { modelInputTokens } from "@opentinker/protocol";
import { evaluate, type RendererTokenizer, trainRl } from "@opentinker/sdk";
import { builtInModel, DEFAULT_TEXT_MODEL } from "../registry.ts";
import { SETTINGS } from "./settings.ts";

const seed = Number(process.argv[2] ?? 4);
const steps = Number(process.argv[3] ?? 300);
const setting = SETTINGS["nim-selfplay-lora-rl"];
if (!setting || !Number.isInteger(seed) || !Number.isInteger(steps) || steps < 1)
  throw new RangeError("usage: nim-illegal-moves.ts [seed] [steps ≥ 1]");

const model = builtInModel(DEFAULT_TEXT_MODEL);
const base = await loadBaseModel(model.dir, model.name);
const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-nim-"));
try {
  const svc = InProcessServiceClient.local([base], scratch, "diagnostic");
  const ctx = { tokenizer: base.tokenizer as RendererTokenizer, seed, steps };
  const tc = await svc.createLoraTrainingClient({ baseModel: base.name, rank: 16, seed });
  await trainRl({
    trainingClient: tc,
    dataset: setting.train(ctx),
    lossFn: setting.lossFn,
    adam: { learningRate: setting.learningRate },
    seed,
  });
  const saved = await (await tc.saveWeightsForSampler("diagnostic")).result();
  const sampler = { client: await tc.createSamplingClient(saved.handle), version: saved.version };
  const { groups, metrics } = await evaluate(sampler, setting.validation(ctx), { seed });
  const illegal = new Map<string, number>();
  for (const t of groups.flatMap((g) => g.trajectories))
    for (const turn of t.transitions) {
      if (turn.metrics["game/illegal_move"] !== 1) continue;
      const seen = Buffer.from(modelInputTokens(turn.observation)).toString("latin1");
      const key = `${seen} → tokens ${JSON.stringify(turn.actionTokens)}`;
      illegal.set(key, (illegal.get(key) ?? 0) + 1);
    }
  console.log(JSON.stringify({ seed, steps, metrics, illegal: Object.fromEntries(illegal) }, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
