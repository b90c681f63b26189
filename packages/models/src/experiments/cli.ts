// npm run experiment -- <setting> [--seed N] [--steps N] [--model NAME|DIR] [--lr X] [--grad-clip X] [--weight-decay X] [--lr-schedule constant|linear|cosine] [--kl X] [--ref-kl X] [--kl-reference base|start] [--pretrain-mix X] [--negative-scale X] [--scale-by-std] [--format-penalty=X] [--groups N] [--rank N] [--out <dir>]
// --model: a built-in model's name (default: the built-in text model), a Hugging
// Face model directory, or "tiny-random" (a random model: wiring checks only).
import path from "node:path";
import { parseArgs } from "node:util";
import { ZLrSchedule } from "@opentinker/protocol";
import { DEFAULT_TEXT_MODEL } from "../registry.ts";
import { runExperiment, settingNames, TINY_RANDOM } from "./run.ts";
import { isKlReference, KL_REFERENCES } from "./settings.ts";

const USAGE = `usage: npm run experiment -- <setting> [--seed N] [--steps N] [--model NAME|DIR] [--lr X] [--grad-clip X] [--weight-decay X] [--lr-schedule constant|linear|cosine] [--kl X] [--ref-kl X] [--kl-reference base|start] [--pretrain-mix X] [--negative-scale X] [--scale-by-std] [--format-penalty=X] [--groups N] [--rank N] [--out DIR]\nsettings: ${settingNames().join(", ")}\nmodel: default ${DEFAULT_TEXT_MODEL}; "${TINY_RANDOM}" checks the wiring only`;

/** The command line, or exit 2 with parseArgs's own message (an unknown option, a value starting with "-" given without "="). */
function parsed() {
  try {
    return parseArgs({
      allowPositionals: true,
      options: {
        seed: { type: "string", default: "1" },
        steps: { type: "string", default: "20" },
        model: { type: "string" },
        out: { type: "string" },
        lr: { type: "string" },
        "grad-clip": { type: "string" },
        "weight-decay": { type: "string" },
        "lr-schedule": { type: "string" },
        kl: { type: "string" },
        "ref-kl": { type: "string" },
        "kl-reference": { type: "string" },
        "pretrain-mix": { type: "string" },
        "negative-scale": { type: "string" },
        "scale-by-std": { type: "boolean" },
        "format-penalty": { type: "string" },
        groups: { type: "string" },
        rank: { type: "string" },
      },
    });
  } catch (error) {
    console.error(`experiment: ${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
    process.exit(2);
  }
}
const { values, positionals } = parsed();
const name = positionals[0];
if (!name) {
  console.error(USAGE);
  process.exit(2);
}
const seed = Number(values.seed);
/** An optional number option, or exit 2 naming it when `valid` refuses it (`what` says what it must be). */
function numberOption(
  flag:
    | "lr"
    | "grad-clip"
    | "weight-decay"
    | "kl"
    | "ref-kl"
    | "pretrain-mix"
    | "negative-scale"
    | "format-penalty"
    | "groups"
    | "rank",
  valid: (n: number) => boolean,
  what: string,
) {
  const raw = values[flag];
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!valid(n)) {
    console.error(`--${flag} must be ${what} (got "${raw}")`);
    process.exit(2);
  }
  return n;
}
const countOf = (n: number) => Number.isInteger(n) && n >= 1;
const learningRate = numberOption("lr", (n) => n > 0, "a positive number");
const gradClipNorm = numberOption("grad-clip", (n) => n >= 0, "a number ≥ 0");
const weightDecay = numberOption("weight-decay", (n) => n >= 0, "a number ≥ 0");
const klCoef = numberOption("kl", (n) => n >= 0, "a number ≥ 0");
const referenceKl = numberOption("ref-kl", (n) => n >= 0, "a number ≥ 0");
const pretrainMix = numberOption("pretrain-mix", (n) => n >= 0, "a number ≥ 0");
const negativeScale = numberOption("negative-scale", (n) => n >= 0 && n <= 1, "a number from 0 to 1");
const formatPenalty = numberOption("format-penalty", (n) => n <= 0, "a number ≤ 0");
const groupsPerStep = numberOption("groups", countOf, "an integer ≥ 1");
const loraRank = numberOption("rank", countOf, "an integer ≥ 1");
const training = {
  ...(formatPenalty === undefined ? {} : { formatPenalty }),
  ...(groupsPerStep === undefined ? {} : { groupsPerStep }),
};
const lrSchedule =
  values["lr-schedule"] === undefined ? undefined : ZLrSchedule.safeParse(values["lr-schedule"]);
if (lrSchedule && !lrSchedule.success) {
  console.error(
    `--lr-schedule must be one of ${ZLrSchedule.options.join(", ")} (got "${values["lr-schedule"]}")`,
  );
  process.exit(2);
}
const klReference = values["kl-reference"];
if (klReference !== undefined && !isKlReference(klReference)) {
  console.error(`--kl-reference must be one of ${KL_REFERENCES.join(", ")} (got "${klReference}")`);
  process.exit(2);
}
const steps = Number(values.steps);
if (!Number.isInteger(seed) || !Number.isInteger(steps) || steps < 1) {
  console.error("--seed and --steps must be integers (steps ≥ 1)");
  process.exit(2);
}
if (values.model === TINY_RANDOM)
  console.error("experiment: tiny-random is a random model: it checks the wiring; no learning claims");
try {
  const summary = await runExperiment({
    name,
    seed,
    steps,
    ...(values.model ? { model: values.model } : {}),
    ...(learningRate === undefined ? {} : { learningRate }),
    ...(gradClipNorm === undefined ? {} : { gradClipNorm }),
    ...(weightDecay ? { weightDecay } : {}),
    ...(lrSchedule ? { lrSchedule: lrSchedule.data } : {}),
    ...(klCoef ? { klCoef } : {}),
    ...(referenceKl === undefined ? {} : { referenceKl }),
    ...(klReference === undefined ? {} : { klReference }),
    ...(pretrainMix ? { pretrainMix } : {}),
    ...(negativeScale === undefined ? {} : { negativeScale }),
    ...(values["scale-by-std"] ? { scaleByStd: true } : {}),
    ...(loraRank === undefined ? {} : { loraRank }),
    ...(Object.keys(training).length > 0 ? { training } : {}),
    outDir: path.resolve(values.out ?? path.join("experiments", "out", `${name}-seed${seed}`)),
  });
  console.log(JSON.stringify(summary, null, 2));
} catch (error) {
  console.error(`experiment: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
