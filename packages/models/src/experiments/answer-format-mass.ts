// node --import tsx packages/models/src/experiments/answer-format-mass.ts <run dir> [--model NAME|DIR] [--policy best|end] ["<a> <op> <b>" ...]
// A diagnostic for docs/results.md (what falls short): where a run's malformed
// arithmetic answers come from, without sampling. For every problem of the
// environment it walks the policy's own tree of answers (every prefix still
// well formed, down to a probability of 1e-5) and adds up the probability of
// leaving the form (a token after which the answer can no longer parse, as the
// environment parses it) — the exact chance that a sampled answer is malformed,
// to within the pruned branches — under the base model and under the run's kept
// policy (`<run dir>/best/`; `--policy end`: the end's, `<run dir>/end/`), by
// split. The problems named after the run directory are shown along their
// right answer: the likeliest tokens at each position.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import {
  ARITHMETIC_OPS,
  ArithmeticEnv,
  type ArithmeticTask,
  applyOp,
  arithmeticKey,
  everyArithmeticTask,
  splitOf,
} from "@opentinker/envs";
import { appendTokens, modelInputTokens, type SamplingClient } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { END, loadRunPolicies, parseRunSnapshot, TOP, walkAnswers } from "./answer-tree.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { model: { type: "string" }, policy: { type: "string" } },
});
const [runDir, ...shown] = positionals;
if (!runDir)
  throw new RangeError(
    'usage: answer-format-mass.ts <run dir> [--model NAME|DIR] [--policy best|end] ["<a> <op> <b>" ...]',
  );

/** The probability that the policy's answer to `task` is malformed (the sum over its tree of answers). */
async function malformedProbability(
  client: SamplingClient,
  tokenizer: RendererTokenizer,
  task: ArithmeticTask,
) {
  const { observation } = await new ArithmeticEnv(task, tokenizer).initialObservation();
  return (await walkAnswers(client, tokenizer, observation)).malformed;
}

/** Per split: the mean probability of a malformed answer, and the problems where it is highest. */
async function malformedBySplit(client: SamplingClient, tokenizer: RendererTokenizer) {
  const by = new Map<string, { problem: string; malformed: number }[]>();
  for (const task of everyArithmeticTask()) {
    const split = splitOf(arithmeticKey(task));
    const rows = by.get(split) ?? [];
    rows.push({
      problem: `${task.a} ${task.op} ${task.b}`,
      malformed: await malformedProbability(client, tokenizer, task),
    });
    by.set(split, rows);
  }
  return Object.fromEntries(
    [...by].map(([split, rows]) => [
      split,
      {
        problems: rows.length,
        meanMalformed: rows.reduce((sum, r) => sum + r.malformed, 0) / rows.length,
        problemsOver10Percent: rows.filter((r) => r.malformed > 0.1).length,
        worst: rows.sort((a, b) => b.malformed - a.malformed).slice(0, 5),
      },
    ]),
  );
}

/** Per position of the right answer (the right prefix before it): the top tokens of the policy's distribution. */
async function answerRows(client: SamplingClient, tokenizer: RendererTokenizer, task: ArithmeticTask) {
  const { observation } = await new ArithmeticEnv(task, tokenizer).initialObservation();
  const start = modelInputTokens(observation).length;
  const answer = tokenizer.encode(`${task.answer}${END}`, { addSpecialTokens: false });
  const response = await (
    await client.sample(appendTokens(observation, answer), 1, { maxTokens: 1 }, { topkPromptLogprobs: TOP })
  ).result();
  const rows = (response.topkPromptLogprobs ?? []).slice(start, start + answer.length);
  return rows.map((row, i) => ({ prefix: tokenizer.decode(answer.slice(0, i)), top: row ?? [] }));
}

/** A problem as written on the command line, "<a> <op> <b>", or a RangeError naming it. */
function parseProblem(problem: string): ArithmeticTask {
  const parts = problem.split(" ");
  const [a = "", op, b = ""] = parts;
  const known = ARITHMETIC_OPS.find((o) => o === op);
  if (parts.length !== 3 || !known || !/^\d+$/.test(a) || !/^\d+$/.test(b))
    throw new RangeError(
      `"${problem}" is not a problem written "<a> <op> <b>" (op one of ${ARITHMETIC_OPS.join(" ")})`,
    );
  return { a: Number(a), b: Number(b), op: known, answer: applyOp(known, Number(a), Number(b)) };
}

async function show(client: SamplingClient, tokenizer: RendererTokenizer, task: ArithmeticTask) {
  return (await answerRows(client, tokenizer, task)).map(({ prefix, top }) => ({
    after: prefix,
    top: top
      .slice(0, 8)
      .map(([id, lp]) => `${JSON.stringify(tokenizer.decode([id]))} ${Math.exp(lp).toFixed(3)}`),
  }));
}

// Refused before any work: a misspelt problem should not cost the whole walk.
const shownTasks = shown.map(parseProblem);
const snapshot = parseRunSnapshot(values.policy);
const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-form-"));
try {
  const run = await loadRunPolicies(runDir, ["arithmetic-lora-rl", "arithmetic-full-sft-rl"], scratch, {
    model: values.model,
    snapshot,
  });
  const out: Record<string, unknown> = { run: runDir, model: run.model };
  for (const [name, client] of Object.entries({ base: run.base, [run.snapshot]: run.trained }))
    out[name] = {
      malformed: await malformedBySplit(client, run.tokenizer),
      shown: Object.fromEntries(
        await Promise.all(
          shown.map(async (p, i) => [p, await show(client, run.tokenizer, shownTasks[i] as ArithmeticTask)]),
        ),
      ),
    };
  console.log(JSON.stringify(out, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
