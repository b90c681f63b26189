// npm run experiment -- <setting> [--seed N] [--steps N] [--model <hf dir>] [--out <dir>]
import path from "node:path";
import { parseArgs } from "node:util";
import { runExperiment } from "./run.ts";
import { SETTINGS } from "./settings.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    seed: { type: "string", default: "1" },
    steps: { type: "string", default: "20" },
    model: { type: "string" },
    out: { type: "string" },
  },
});
const name = positionals[0];
if (!name) {
  console.error(
    `usage: npm run experiment -- <setting> [--seed N] [--steps N] [--model DIR] [--out DIR]\nsettings: ${Object.keys(SETTINGS).join(", ")}`,
  );
  process.exit(2);
}
const seed = Number(values.seed);
const steps = Number(values.steps);
if (!Number.isInteger(seed) || !Number.isInteger(steps) || steps < 1) {
  console.error("--seed and --steps must be integers (steps ≥ 1)");
  process.exit(2);
}
if (!values.model)
  console.error(
    "experiment: no --model given: using a tiny random model (checks the wiring; no learning claims)",
  );
try {
  const summary = await runExperiment({
    name,
    seed,
    steps,
    ...(values.model ? { modelDir: path.resolve(values.model) } : {}),
    outDir: path.resolve(values.out ?? path.join("experiments", "out", `${name}-seed${seed}`)),
  });
  console.log(JSON.stringify(summary, null, 2));
} catch (error) {
  console.error(`experiment: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
