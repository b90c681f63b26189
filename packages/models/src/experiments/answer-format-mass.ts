// node --import tsx packages/models/src/experiments/answer-format-mass.ts <run dir> [--model NAME|DIR] ["<a> <op> <b>" ...]
// A diagnostic for docs/results.md (what falls short): where a run's malformed
// arithmetic answers come from, without sampling. For every problem of the
// environment it walks the policy's own tree of answers (every prefix still
// well formed, down to a probability of 1e-5) and adds up the probability of
// leaving the form (a token after which the answer can no longer parse, as the
// environment parses it) — the exact chance that a sampled answer is malformed,
// to within the pruned branches — under the base model and under the run's kept
// policy (`<run dir>/best/`), by split. The problems named after the run
// directory are shown along their right answer: the likeliest tokens at each position.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { InProcessServiceClient } from "@opentinker/engine";
import {
  ARITHMETIC_OPS,
  ArithmeticEnv,
  type ArithmeticTask,
  applyOp,
  arithmeticKey,
  DEFAULT_MAX_TOKENS,
  everyArithmeticTask,
  splitOf,
} from "@opentinker/envs";
import { appendTokens, type ModelInput, modelInputTokens, type SamplingClient } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { z } from "zod";
import { loadExperimentModel } from "./run.ts";

const TOP = 20;
/** Branches less likely than this are not walked (their mass is left out). */
const PRUNE = 1e-5;
const END = "<|im_end|>";
const { values, positionals } = parseArgs({ allowPositionals: true, options: { model: { type: "string" } } });
const [runDir, ...shown] = positionals;
if (!runDir)
  throw new RangeError('usage: answer-format-mass.ts <run dir> [--model NAME|DIR] ["<a> <op> <b>" ...]');

/** The most likely next tokens after `context`, as [token, logprob]: the row that predicts a probe token appended to it. */
async function nextTokens(client: SamplingClient, context: ModelInput, probe: number) {
  const response = await (
    await client.sample(appendTokens(context, [probe]), 1, { maxTokens: 1 }, { topkPromptLogprobs: TOP })
  ).result();
  return response.topkPromptLogprobs?.at(-1) ?? [];
}

/** Whether `text` after `prefix` leaves an answer that still parses (parseInteger: optional spaces, a sign, 1–9 digits). */
const keepsForm = (prefix: string, text: string) =>
  text === END ? /^-?\d{1,9}$/.test(prefix.trim()) : /^\s*-?\d{0,9}\s*$/.test(prefix + text);

/** The probability that the policy's answer to `task` is malformed (the sum over its tree of answers). */
async function malformedProbability(
  client: SamplingClient,
  tokenizer: RendererTokenizer,
  task: ArithmeticTask,
) {
  const { observation } = await new ArithmeticEnv(task, tokenizer).initialObservation();
  const end = tokenizer.tokenId(END);
  if (end === undefined) throw new Error(`the tokenizer has no ${END} token`);
  let malformed = 0;
  const open = [{ tokens: [] as number[], probability: 1 }];
  for (let node = open.pop(); node; node = open.pop()) {
    const prefix = tokenizer.decode(node.tokens);
    let kept = 0;
    for (const [id, logprob] of await nextTokens(client, appendTokens(observation, node.tokens), end)) {
      const text = tokenizer.decode([id]);
      if (!keepsForm(prefix, text)) continue;
      const p = Math.exp(logprob);
      // An answer that has not ended by the renderer's token limit is malformed too.
      if (text !== END && node.tokens.length + 1 >= DEFAULT_MAX_TOKENS) continue;
      kept += p;
      if (text !== END && node.probability * p >= PRUNE)
        open.push({ tokens: [...node.tokens, id], probability: node.probability * p });
    }
    malformed += node.probability * Math.max(0, 1 - kept);
  }
  return malformed;
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

const ZRun = z.object({ model: z.string() });
// Refused before any work: a misspelt problem should not cost the whole walk.
const shownTasks = shown.map(parseProblem);
const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-form-"));
try {
  // A run on a model directory records only its name: --model says where it is.
  const model =
    values.model ?? ZRun.parse(JSON.parse(await readFile(path.join(runDir, "summary.json"), "utf8"))).model;
  const base = await loadExperimentModel(model, scratch);
  const tokenizer = base.tokenizer as RendererTokenizer;
  const svc = InProcessServiceClient.local([base], scratch, "diagnostic");
  const bestDir = path.join(runDir, "best");
  const files = new Map<string, Uint8Array>();
  for (const name of await readdir(bestDir))
    files.set(name, new Uint8Array(await readFile(path.join(bestDir, name))));
  const stored = await svc.store.put("diagnostic/kept", files);
  const kept = await svc.registry.publish(svc.team, "kept", stored, 0, base.name);
  const policies = {
    base: await svc.createSamplingClient({ baseModel: base.name }),
    kept: await svc.createSamplingClient({ handle: kept.handle }),
  };
  const out: Record<string, unknown> = { run: runDir, model };
  for (const [name, client] of Object.entries(policies))
    out[name] = {
      malformed: await malformedBySplit(client, tokenizer),
      shown: Object.fromEntries(
        await Promise.all(
          shown.map(async (p, i) => [p, await show(client, tokenizer, shownTasks[i] as ArithmeticTask)]),
        ),
      ),
    };
  console.log(JSON.stringify(out, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
