// Trains a LoRA adapter with trainRl on a toy task (examples/toy-rl.ts),
// in-process, in about a minute on two cores, printing the reward as it rises.
//   npm run example:rl [-- --model <hf dir>] [-- --steps 12]
// Without --model it writes a tiny random model (with a real tokenizer) first.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { runToyRlExample } from "./toy-rl.ts";

const { values } = parseArgs({
  options: { model: { type: "string" }, steps: { type: "string", default: "12" } },
});
const work = await mkdtemp(path.join(tmpdir(), "opentinker-example-"));
try {
  let modelDir = values.model;
  if (!modelDir) {
    modelDir = path.join(work, "model");
    await writeTinyModel(modelDir, { ...TINY_MODEL, seed: 2 });
  }
  const base = await loadBaseModel(modelDir, "toy");
  const service = InProcessServiceClient.local([base], path.join(work, "snapshots"), "example");
  await runToyRlExample(service, { baseModel: "toy", steps: Number(values.steps), name: "rl-lora-toy" });
} finally {
  await rm(work, { recursive: true, force: true });
}
