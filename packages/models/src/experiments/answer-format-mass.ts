// node --import tsx packages/models/src/experiments/answer-format-mass.ts <run dir> ["<a> <op> <b>" ...]
// A diagnostic for docs/results.md (what falls short): where a run's malformed
// arithmetic answers come from. For every problem of the environment it walks
// the right answer token by token (teacher-forced) and measures the mass the
// policy puts on tokens that keep the answer well formed (a digit, a minus sign
// first, or the end of the turn), under the base model and under the run's kept
// policy (`<run dir>/best/`), by split. The problems named after the run
// directory are shown in full: the most likely tokens at each position.
import { mkdtemp, readdir, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import {
  ArithmeticEnv,
  type ArithmeticOp,
  type ArithmeticTask,
  applyOp,
  arithmeticKey,
  everyArithmeticTask,
  splitOf,
} from "@opentinker/envs";
import { appendTokens, modelInputTokens, type SamplingClient } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { z } from "zod";
import { loadExperimentModel } from "./run.ts";

const TOP = 20;
const [runDir, ...shown] = process.argv.slice(2);
if (!runDir) throw new RangeError('usage: answer-format-mass.ts <run dir> ["<a> <op> <b>" ...]');

/** Per answer position (the right prefix before it): the top tokens of the policy's distribution. */
async function answerRows(client: SamplingClient, tokenizer: RendererTokenizer, task: ArithmeticTask) {
  const { observation } = await new ArithmeticEnv(task, tokenizer).initialObservation();
  const start = modelInputTokens(observation).length;
  const answer = tokenizer.encode(`${task.answer}<|im_end|>`, { addSpecialTokens: false });
  const response = await (
    await client.sample(appendTokens(observation, answer), 1, { maxTokens: 1 }, { topkPromptLogprobs: TOP })
  ).result();
  const rows = (response.topkPromptLogprobs ?? []).slice(start, start + answer.length);
  return rows.map((row, i) => ({ prefix: tokenizer.decode(answer.slice(0, i)), top: row ?? [] }));
}

/** Whether `text` may come next after `prefix` in a well-formed answer. */
const keepsForm = (prefix: string, text: string) =>
  text === "<|im_end|>"
    ? prefix !== "" && prefix !== "-"
    : /^[0-9]+$/.test(text) || (prefix === "" && text === "-");

/** Per split: the mean mass off the answer's form (an upper bound: only the 20 likeliest tokens count as kept) and the worst problems. */
async function formMass(client: SamplingClient, tokenizer: RendererTokenizer) {
  const by = new Map<string, { off: number; positions: number; worst: { problem: string; off: number }[] }>();
  for (const task of everyArithmeticTask()) {
    const split = splitOf(arithmeticKey(task));
    const e = by.get(split) ?? { off: 0, positions: 0, worst: [] };
    let worst = 0;
    for (const { prefix, top } of await answerRows(client, tokenizer, task)) {
      const kept = top
        .filter(([id]) => keepsForm(prefix, tokenizer.decode([id])))
        .reduce((sum, [, lp]) => sum + Math.exp(lp), 0);
      e.off += 1 - kept;
      e.positions++;
      worst = Math.max(worst, 1 - kept);
    }
    e.worst.push({ problem: `${task.a} ${task.op} ${task.b}`, off: worst });
    by.set(split, e);
  }
  return Object.fromEntries(
    [...by].map(([split, e]) => [
      split,
      {
        problems: e.worst.length,
        meanOffFormPerPosition: e.off / e.positions,
        problemsWithAPositionOver10Percent: e.worst.filter((w) => w.off > 0.1).length,
        worst: e.worst.sort((a, b) => b.off - a.off).slice(0, 5),
      },
    ]),
  );
}

async function show(client: SamplingClient, tokenizer: RendererTokenizer, problem: string) {
  const [a, op, b] = problem.split(" ");
  const task = {
    a: Number(a),
    b: Number(b),
    op: op as ArithmeticOp,
    answer: applyOp(op as ArithmeticOp, Number(a), Number(b)),
  };
  return (await answerRows(client, tokenizer, task)).map(({ prefix, top }) => ({
    after: prefix,
    top: top
      .slice(0, 8)
      .map(([id, lp]) => `${JSON.stringify(tokenizer.decode([id]))} ${Math.exp(lp).toFixed(3)}`),
  }));
}

const ZRun = z.object({ model: z.string() });
const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-form-"));
try {
  const { model } = ZRun.parse(JSON.parse(await readFile(path.join(runDir, "summary.json"), "utf8")));
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
      formMass: await formMass(client, tokenizer),
      shown: Object.fromEntries(
        await Promise.all(shown.map(async (p) => [p, await show(client, tokenizer, p)])),
      ),
    };
  console.log(JSON.stringify(out, null, 2));
} finally {
  await rm(scratch, { recursive: true, force: true });
}
