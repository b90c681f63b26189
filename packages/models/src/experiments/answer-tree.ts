// What the malformed-answer diagnostics share (answer-format-mass.ts for
// arithmetic, guess-format-mass.ts for guess-number): a run's base and trained
// policies loaded side by side, and the walk over a policy's own tree of
// integer answers to one context — the exact chance that a sampled answer is
// malformed (to within the pruned branches) and every well-formed answer with
// its probability.
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { InProcessServiceClient } from "@opentinker/engine";
import { DEFAULT_MAX_TOKENS } from "@opentinker/envs";
import { appendTokens, type ModelInput, type SamplingClient } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { z } from "zod";
import { loadExperimentModel } from "./run.ts";

/** Next tokens read per position: the rest of the distribution counts as leaving the form. */
export const TOP = 20;
/** Branches less likely than this (over the whole path) are not walked; their mass is left out. */
export const PRUNE = 1e-5;
export const END = "<|im_end|>";

/** The most likely next tokens after `context`, as [token, logprob]: the row that predicts a probe token appended to it. */
export async function nextTokens(client: SamplingClient, context: ModelInput, probe: number) {
  const response = await (
    await client.sample(appendTokens(context, [probe]), 1, { maxTokens: 1 }, { topkPromptLogprobs: TOP })
  ).result();
  return response.topkPromptLogprobs?.at(-1) ?? [];
}

/** Whether `text` after `prefix` leaves an answer that still parses (parseInteger: optional spaces, a sign, 1–9 digits). */
const keepsForm = (prefix: string, text: string) =>
  text === END ? /^-?\d{1,9}$/.test(prefix.trim()) : /^\s*-?\d{0,9}\s*$/.test(prefix + text);

export interface AnswerTree {
  /** The probability that the answer is malformed. */
  malformed: number;
  /** Each well-formed answer walked: its tokens, ending with the end of turn, its value and probability. */
  answers: { tokens: number[]; value: number; probability: number }[];
}

/**
 * The policy's answers to `context`, walked token by token. `reach` is the
 * probability of arriving at the context at all: a branch is pruned when the
 * whole path to it is less likely than PRUNE.
 */
export async function walkAnswers(
  client: SamplingClient,
  tokenizer: RendererTokenizer,
  context: ModelInput,
  reach = 1,
): Promise<AnswerTree> {
  const end = tokenizer.tokenId(END);
  if (end === undefined) throw new Error(`the tokenizer has no ${END} token`);
  const tree: AnswerTree = { malformed: 0, answers: [] };
  const open = [{ tokens: [] as number[], probability: 1 }];
  for (let node = open.pop(); node; node = open.pop()) {
    const prefix = tokenizer.decode(node.tokens);
    let kept = 0;
    for (const [id, logprob] of await nextTokens(client, appendTokens(context, node.tokens), end)) {
      const text = tokenizer.decode([id]);
      if (!keepsForm(prefix, text)) continue;
      // An answer that has not ended by the renderer's token limit is malformed too.
      if (text !== END && node.tokens.length + 1 >= DEFAULT_MAX_TOKENS) continue;
      const p = Math.exp(logprob);
      kept += p;
      const probability = node.probability * p;
      if (text === END)
        tree.answers.push({ tokens: [...node.tokens, id], value: Number(prefix.trim()), probability });
      else if (reach * probability >= PRUNE) open.push({ tokens: [...node.tokens, id], probability });
    }
    tree.malformed += node.probability * Math.max(0, 1 - kept);
  }
  return tree;
}

/** Which of a run's snapshots to read: the kept best (`best/`) or the one the end check measured (`end/`). */
export type RunSnapshot = "best" | "end";

/** `--policy best|end`, or a RangeError naming what was given. */
export function parseRunSnapshot(value: string | undefined): RunSnapshot {
  if (value === undefined || value === "best" || value === "end") return value ?? "best";
  throw new RangeError(`--policy: "${value}" is not best or end`);
}

export interface RunPolicies {
  model: string;
  tokenizer: RendererTokenizer;
  base: SamplingClient;
  /** The run's snapshot named by `snapshot` (`<run dir>/<snapshot>/`). */
  trained: SamplingClient;
  snapshot: RunSnapshot;
}

const ZRun = z.object({ setting: z.string(), model: z.string() });

/**
 * The base model and one of a run's snapshots, served in process from
 * `scratch`. A run on a model directory records only its name: `model` says
 * where it is. A run of a setting not in `settings` is refused by name.
 */
export async function loadRunPolicies(
  runDir: string,
  settings: readonly string[],
  scratch: string,
  options: { model?: string; snapshot?: RunSnapshot } = {},
): Promise<RunPolicies> {
  const summary = ZRun.parse(JSON.parse(await readFile(path.join(runDir, "summary.json"), "utf8")));
  if (!settings.includes(summary.setting))
    throw new RangeError(`${runDir} is a run of ${summary.setting}, not of ${settings.join(" or ")}`);
  const model = options.model ?? summary.model;
  const snapshot = options.snapshot ?? "best";
  const base = await loadExperimentModel(model, scratch);
  const svc = InProcessServiceClient.local([base], scratch, "diagnostic");
  const dir = path.join(runDir, snapshot);
  const files = new Map<string, Uint8Array>();
  for (const name of await readdir(dir))
    files.set(name, new Uint8Array(await readFile(path.join(dir, name))));
  const stored = await svc.store.put(`diagnostic/${snapshot}`, files);
  const trained = await svc.registry.publish(svc.team, snapshot, stored, 0, base.name);
  return {
    model,
    tokenizer: base.tokenizer as RendererTokenizer,
    base: await svc.createSamplingClient({ baseModel: base.name }),
    trained: await svc.createSamplingClient({ handle: trained.handle }),
    snapshot,
  };
}
