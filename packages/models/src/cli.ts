// npm run build:model -w @opentinker/models -- <text|shapes> [--check] [--out DIR] [--threads N] [--steps N]
// npm run eval -w @opentinker/models -- [NAME | DIR] [--episodes N] [--seed N] [--tasks a,b]
//
// build: trains a built-in model (text or vision-language) from its recipe and writes it into
// built-in/<name>/ with checksums.json. --check builds into a scratch directory
// instead and compares every file with the committed checksums (exit 1 on any
// difference). --threads / --steps override the recipe, for determinism checks
// only: the result is then not the built-in model.
// eval: the starting validation success of a model on each text task (on shapes
// for a vision-language model).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { loadBaseModel } from "@opentinker/engine";
import { buildTextModel } from "./build/build-text-model.ts";
import { buildVlModel } from "./build/build-vl-model.ts";
import { buildEnvironment, compareChecksums, readChecksums } from "./build/checksums.ts";
import type { PretrainStep } from "./build/pretrain.ts";
import { ALL_TEXT_TASKS, evaluateTextTasks, TEXT_TASKS, type TextTask } from "./evaluate.ts";
import { evaluateShapes } from "./evaluate-shapes.ts";
import { TEXT_RECIPES } from "./recipes.ts";
import { BUILT_IN_MODELS, BUILT_IN_ROOT, DEFAULT_TEXT_MODEL } from "./registry.ts";
import { VL_RECIPES } from "./vl-recipes.ts";

const USAGE = `usage:
  build <${[...Object.keys(TEXT_RECIPES), ...Object.keys(VL_RECIPES)].join("|")}> [--check] [--out DIR] [--threads N] [--steps N]
  eval [NAME|DIR] [--episodes N] [--seed N] [--tasks ${ALL_TEXT_TASKS.join(",")}]`;

function positiveInt(value: string | undefined, flag: string): number | undefined {
  if (value === undefined) return undefined;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1)
    throw new RangeError(`--${flag} must be a positive integer, got "${value}"`);
  return n;
}

async function build(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      check: { type: "boolean", default: false },
      out: { type: "string" },
      threads: { type: "string" },
      steps: { type: "string" },
    },
  });
  const which = positionals[0];
  const base = which ? (TEXT_RECIPES[which] ?? VL_RECIPES[which]) : undefined;
  if (!base) throw new RangeError(`build: name a recipe\n${USAGE}`);
  const threads = positiveInt(values.threads, "threads");
  const steps = positiveInt(values.steps, "steps");
  const recipe = {
    ...base,
    ...(threads ? { kernelThreads: threads } : {}),
    pretrain: { ...base.pretrain, ...(steps ? { steps } : {}) },
  };
  const committed = path.join(BUILT_IN_ROOT, recipe.name);
  const scratch = values.check ? await mkdtemp(path.join(tmpdir(), "opentinker-model-check-")) : undefined;
  const dir = scratch ?? (values.out ? path.resolve(values.out) : committed);
  try {
    const log = (line: string) => console.error(`build ${recipe.name}: ${line}`);
    const every = Math.max(1, Math.floor(recipe.pretrain.steps / 20));
    const onStep = (s: PretrainStep) => {
      if ((s.step + 1) % every === 0)
        log(
          `step ${s.step + 1}/${recipe.pretrain.steps} loss ${s.loss.toFixed(4)} lr ${s.learningRate.toExponential(2)}`,
        );
    };
    const result =
      "vision" in recipe
        ? await buildVlModel(recipe, dir, log, onStep)
        : await buildTextModel(recipe, dir, log, onStep);
    log(`done in ${result.seconds.toFixed(0)} s → ${dir}`);
    for (const [file, sha] of Object.entries(result.checksums.files)) console.log(`${sha}  ${file}`);
    if (!scratch) return 0;
    const recorded = await readChecksums(committed);
    const mismatches = await compareChecksums(dir, recorded.files);
    if (mismatches.length === 0) {
      console.log(`check: every file matches ${path.join(committed, "checksums.json")}`);
      return 0;
    }
    for (const m of mismatches)
      console.error(`check: ${m.file}: expected ${m.expected}, built ${m.actual ?? "nothing"}`);
    const now = buildEnvironment();
    if (JSON.stringify(now) !== JSON.stringify(recorded.build))
      console.error(
        `check: the build environment differs from the recorded one (recorded ${JSON.stringify(recorded.build)}, now ${JSON.stringify(now)}); float results depend on it`,
      );
    return 1;
  } finally {
    if (scratch) await rm(scratch, { recursive: true, force: true });
  }
}

/** `--tasks a,b`: the text tasks to score (default: the text model's three). */
function textTasks(list: string | undefined): readonly TextTask[] {
  if (list === undefined) return TEXT_TASKS;
  const known: readonly string[] = ALL_TEXT_TASKS;
  return list.split(",").map((name) => {
    if (!known.includes(name))
      throw new RangeError(`--tasks: unknown task "${name}" (known: ${known.join(", ")})`);
    return name as TextTask;
  });
}

async function evalCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      episodes: { type: "string" },
      seed: { type: "string", default: "1" },
      tasks: { type: "string" },
    },
  });
  const target = positionals[0] ?? DEFAULT_TEXT_MODEL;
  const builtIn = BUILT_IN_MODELS.find((m) => m.name === target);
  const dir = builtIn ? builtIn.dir : path.resolve(target);
  const base = await loadBaseModel(dir, builtIn?.name ?? path.basename(dir));
  const seed = Number(values.seed);
  if (!Number.isInteger(seed)) throw new RangeError(`--seed must be an integer, got "${values.seed}"`);
  const options = { seed, episodes: positiveInt(values.episodes, "episodes") ?? 256 };
  // A vision-language model is scored on the image task; a text model on the text tasks.
  const scores = base.config.vision
    ? { shapes: await evaluateShapes(base, options) }
    : await evaluateTextTasks(base, options, textTasks(values.tasks));
  console.log(JSON.stringify({ model: base.name, seed, scores }, null, 2));
  return 0;
}

const [command, ...rest] = process.argv.slice(2);
try {
  if (command === "build") process.exitCode = await build(rest);
  else if (command === "eval") process.exitCode = await evalCommand(rest);
  else {
    console.error(USAGE);
    process.exitCode = 2;
  }
} catch (error) {
  console.error(`models: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
}
