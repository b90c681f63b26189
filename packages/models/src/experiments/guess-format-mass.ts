// node --import tsx packages/models/src/experiments/guess-format-mass.ts <run dir> [--model NAME|DIR] [--policy best|end] [--ranges 16,8]
// A diagnostic for docs/results.md (what falls short): answer-format-mass.ts
// for guess-number. The chance that a game ends on a malformed guess, under
// the base model and under the run's kept policy (`<run dir>/best/`;
// `--policy end`: the end's, `<run dir>/end/`), by range (16 is the held-out
// one) and by what the malformed guess answers (the first turn, `higher` or
// `lower`). Each turn's chance of a malformed guess is exact
// (the policy's own tree of answers, as in answer-format-mass.ts); the game's
// path through its turns is sampled among well-formed guesses, 16 paths per
// secret with the same random numbers for every policy. A range's figure is
// its secrets' mean, as a game draws them; the training split's is the mean
// of its ranges', as a game draws those.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  GUESS_RANGES,
  GUESS_VALIDATION_RANGE,
  GuessNumberEnv,
  type GuessTask,
  seededRandom,
} from "@opentinker/envs";
import type { ModelInput, SamplingClient } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { loadRunPolicies, PRUNE, parseRunSnapshot, walkAnswers } from "./answer-tree.ts";

/** Game paths sampled per secret. */
const PATHS = 16;

const USAGE = "usage: guess-format-mass.ts <run dir> [--model NAME|DIR] [--policy best|end] [--ranges 16,8]";
const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { model: { type: "string" }, policy: { type: "string" }, ranges: { type: "string" } },
});
const [runDir] = positionals;
if (!runDir || positionals.length > 1) throw new RangeError(USAGE);

/** The ranges to walk, each one of GUESS_RANGES, or a RangeError naming the one that is not. */
function parseRanges(list: string | undefined): number[] {
  if (list === undefined) return [...GUESS_RANGES];
  return list.split(",").map((r) => {
    const range = Number(r);
    if (!/^\d+$/.test(r) || !GUESS_RANGES.includes(range))
      throw new RangeError(
        `--ranges: "${r}" is not one of the guess-number ranges ${GUESS_RANGES.join(", ")}`,
      );
    return range;
  });
}

type Feedback = "first" | "higher" | "lower";

interface GameMass {
  /** The probability that the game ends on a malformed guess. */
  malformed: number;
  /** The same, split by what the malformed guess answers. */
  byFeedback: Record<Feedback, number>;
}

/** Picks an answer in proportion to its probability (they sum to the walked well-formed mass). */
function pick<T extends { probability: number }>(answers: T[], random: () => number): T | undefined {
  let left = random() * answers.reduce((sum, a) => sum + a.probability, 0);
  for (const answer of answers) {
    left -= answer.probability;
    if (left <= 0) return answer;
  }
  return answers.at(-1);
}

/**
 * One game path's estimate of the malformed probability. The whole game tree
 * is too large to walk (tens of thousands of turns per secret), so the path
 * is sampled among well-formed guesses, while each turn's malformed chance is
 * exact: the estimate adds, turn by turn, the chance of reaching the turn
 * (every earlier guess well formed) times the turn's malformed chance. Its
 * mean over paths is the game's probability; rare malformed guesses cost no
 * sampling noise, only the path does.
 */
async function pathMass(
  client: SamplingClient,
  tokenizer: RendererTokenizer,
  task: GuessTask,
  random: () => number,
) {
  const mass: GameMass = { malformed: 0, byFeedback: { first: 0, higher: 0, lower: 0 } };
  const env = new GuessNumberEnv(task, tokenizer);
  let context: ModelInput | undefined = (await env.initialObservation()).observation;
  let reach = 1;
  let feedback: Feedback = "first";
  for (let turn = 1; ; turn++) {
    if (!context) throw new Error(`guess-number ended before turn ${turn}`);
    const tree = await walkAnswers(client, tokenizer, context);
    mass.malformed += reach * tree.malformed;
    mass.byFeedback[feedback] += reach * tree.malformed;
    reach *= 1 - tree.malformed;
    const answer = pick(tree.answers, random);
    if (!answer) return mass;
    const last = await env.step(answer.tokens);
    // The walk's form and the environment's parsing must agree, or every figure here is wrong.
    if (last.metrics?.["format/malformed"] === 1)
      throw new Error(
        `the environment refused ${JSON.stringify(tokenizer.decode(answer.tokens))}, a well-formed answer`,
      );
    if (last.done) return mass;
    context = last.nextObservation;
    feedback = answer.value < task.secret ? "higher" : "lower";
  }
}

const mean = (xs: number[]) => xs.reduce((sum, x) => sum + x, 0) / xs.length;
/** The sample variance (n − 1). */
function variance(xs: number[]) {
  const m = mean(xs);
  return xs.reduce((sum, x) => sum + (x - m) ** 2, 0) / (xs.length - 1);
}

/** Every secret of a range, PATHS sampled game paths each: the mean estimate, its standard error, and the worst secrets. */
async function rangeMass(client: SamplingClient, tokenizer: RendererTokenizer, max: number) {
  const paths: (GameMass & { secret: number })[] = [];
  for (let secret = 1; secret <= max; secret++) {
    // The same paths' random numbers for every policy and run: a seed per game.
    const random = seededRandom(max * 1_000 + secret);
    for (let i = 0; i < PATHS; i++)
      paths.push({ secret, ...(await pathMass(client, tokenizer, { secret, max }, random)) });
  }
  const malformed = paths.map((p) => p.malformed);
  const feedback = (f: Feedback) => mean(paths.map((p) => p.byFeedback[f]));
  const bySecret = Array.from({ length: max }, (_, i) => ({
    secret: i + 1,
    malformed: mean(paths.filter((p) => p.secret === i + 1).map((p) => p.malformed)),
  }));
  return {
    max,
    split: max === GUESS_VALIDATION_RANGE ? "validation" : "train",
    malformed: mean(malformed),
    standardError: Math.sqrt(variance(malformed) / malformed.length),
    byFeedback: { first: feedback("first"), higher: feedback("higher"), lower: feedback("lower") },
    worst: bySecret.sort((a, b) => b.malformed - a.malformed).slice(0, 3),
  };
}

async function policyMass(client: SamplingClient, tokenizer: RendererTokenizer, ranges: number[]) {
  const rows = [];
  for (const max of ranges) rows.push(await rangeMass(client, tokenizer, max));
  const train = rows.filter((r) => r.split === "train");
  return {
    trainMalformed: train.length > 0 ? mean(train.map((r) => r.malformed)) : null,
    ranges: rows,
  };
}

const ranges = parseRanges(values.ranges);
const snapshot = parseRunSnapshot(values.policy);
const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-form-"));
try {
  const run = await loadRunPolicies(runDir, ["guess-number-lora-rl"], scratch, {
    model: values.model,
    snapshot,
  });
  const out: Record<string, unknown> = { run: runDir, model: run.model, prune: PRUNE };
  for (const [name, client] of Object.entries({ base: run.base, [run.snapshot]: run.trained }))
    out[name] = await policyMass(client, run.tokenizer, ranges);
  console.log(JSON.stringify(out, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
