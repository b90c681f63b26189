// One setting's policy trained end to end on a service: evaluations at the
// start, the optional SFT phase, RL with periodic validation, evaluations at
// the end, and fingerprints of the final state (for the isolation check).
import { createHash } from "node:crypto";
import type { InProcessServiceClient, InProcessTrainingClient } from "@opentinker/engine";
import { buildSftDatum, type Datum, formatSamplerHandle, type LrSchedule } from "@opentinker/protocol";
import {
  evaluate,
  type MetricsRecord,
  type MetricsSink,
  type RendererTokenizer,
  type RlDataset,
  trainRl,
  trainSft,
} from "@opentinker/sdk";
import type { Example } from "../corpus/index.ts";
import { type MalformedInput, malformedInputs, malformedRate } from "./malformed-inputs.ts";
import { pretrainMix } from "./pretrain-mix.ts";
import type { RunSummary } from "./run.ts";
import type { KlReference, Setting, SettingContext, SftPhase, TrainingOverrides } from "./settings.ts";

export interface TrainSettingOptions {
  baseModel: string;
  tokenizer: RendererTokenizer;
  seed: number;
  steps: number;
  sink: MetricsSink;
  validateEvery?: number;
  learningRate?: number;
  /** Overrides the setting's gradient-norm clip (0: none). */
  gradClipNorm?: number;
  /** AdamW's decoupled weight decay for RL (default 0): p ← p · (1 − lr · weightDecay) each step. */
  weightDecay?: number;
  /** Overrides the setting's learning-rate schedule. */
  lrSchedule?: LrSchedule;
  /** A KL penalty against the policy RL starts from (after SFT, if any), folded into the advantages. */
  klCoef?: number;
  /** Overrides the setting's full-vocabulary KL to the frozen base model (lossFnConfig.referenceKl; 0: none). */
  referenceKl?: number;
  /** Overrides what that KL holds the policy near. */
  klReference?: KlReference;
  /** Mix the base model's pretraining corpus into each RL step at this weight per answer token (PPO-ptx; pretrain-mix.ts). */
  pretrainMix?: number;
  /** Divide each group's advantages by its returns' standard deviation (default: centred only). */
  scaleByStd?: boolean;
  /** Multiply negative advantages by this (default 1). */
  negativeScale?: number;
  /** Validation batches of the start and end checks (default CHECK_BATCHES; tests use fewer). */
  checkBatches?: number;
  training?: TrainingOverrides;
  /** The LoRA adapter's rank (default LORA_RANK; ignored by a full-parameter setting). */
  loraRank?: number;
}

/** What a run may change of its setting: the experiment runner's options pass these on as they are. */
export type SettingOverrides = Pick<
  TrainSettingOptions,
  | "validateEvery"
  | "learningRate"
  | "gradClipNorm"
  | "weightDecay"
  | "lrSchedule"
  | "klCoef"
  | "referenceKl"
  | "klReference"
  | "pretrainMix"
  | "scaleByStd"
  | "negativeScale"
  | "training"
  | "checkBatches"
  | "loraRank"
>;

/** The snapshot with the best validation so far: what a run that degenerates late still leaves. */
export interface BestSnapshot {
  /** Steps trained when it was measured (0: before training). */
  step: number;
  version: number;
  value: number;
  checksum: string;
}

export interface SettingRun {
  summary: RunSummary;
  /** The best snapshot's files (PEFT, or the whole model for a full-parameter policy). */
  bestFiles: Map<string, Uint8Array>;
  /** The files of the snapshot the end check measured (for diagnosing what the run ended with). */
  endFiles: Map<string, Uint8Array>;
  metric: string;
  validationStart: number;
  validationAfterSft?: number;
  records: MetricsRecord[];
}

export const LORA_RANK = 16;
/**
 * The start and end checks draw this many validation batches (1,024 episodes
 * for a 128-episode batch): a rise of one malformed answer in a hundred is
 * then told apart from chance, which one batch cannot do.
 */
export const CHECK_BATCHES = 8;

async function trainingClient(svc: InProcessServiceClient, s: Setting, o: TrainSettingOptions) {
  return s.policy === "full"
    ? svc.createFullTrainingClient({ baseModel: o.baseModel })
    : svc.createLoraTrainingClient({ baseModel: o.baseModel, rank: o.loraRank ?? LORA_RANK, seed: o.seed });
}

/** The current weights published and evaluated on each dataset: metric and malformed rate. */
async function evaluateNow(
  tc: InProcessTrainingClient,
  datasets: Record<string, RlDataset>,
  metric: string,
  seed: number,
  tokenizer: RendererTokenizer,
) {
  const saved = await (await tc.saveWeightsForSampler("evaluate")).result();
  const sampler = { client: await tc.createSamplingClient(saved.handle), version: saved.version };
  const version = saved.version;
  const out: Record<
    string,
    {
      value: number;
      malformed: number;
      episodes: number;
      metrics: Record<string, number>;
      inputs: MalformedInput[];
    }
  > = {};
  for (const [name, dataset] of Object.entries(datasets)) {
    const { groups, metrics } = await evaluate(sampler, dataset, { seed });
    const { step: _, ...named } = metrics;
    out[name] = {
      value: metrics[`val/${metric}`] ?? 0,
      malformed: malformedRate(metrics, "val/"),
      episodes: groups.reduce((n, g) => n + g.trajectories.length, 0),
      metrics: named,
      inputs: malformedInputs(groups, tokenizer),
    };
  }
  return { version, handle: saved.handle, sampler: sampler.client, results: out };
}

/** The first of the highest: a later snapshot must beat an earlier one to replace it. */
function bestOf(candidates: readonly Omit<BestSnapshot, "checksum">[]) {
  return candidates.reduce((best, c) => (c.value > best.value ? c : best));
}

/** Weights sum to 1 per batch, so the loss is a mean over answer tokens whatever their count. */
function sftDatums(examples: readonly Example[], batchSize: number): Datum[] {
  return examples.map((e) => {
    const total = e.weights.reduce((a, w) => a + w, 0) * batchSize;
    return buildSftDatum({ sequence: e.tokens, weights: e.weights.map((w) => w / total) });
  });
}

/** The SFT phase: its first `steps × batchSize` examples, in batches, at its learning rate. */
export async function runSftPhase(tc: InProcessTrainingClient, sft: SftPhase, examples: readonly Example[]) {
  await trainSft({
    trainingClient: tc,
    data: sftDatums(examples.slice(0, sft.steps * sft.batchSize), sft.batchSize),
    batchSize: sft.batchSize,
    adam: { learningRate: sft.learningRate },
    ...(sft.referenceKl ? { lossFnConfig: { referenceKl: sft.referenceKl } } : {}),
  });
}

function stateSha256(tc: InProcessTrainingClient): string {
  const hash = createHash("sha256");
  for (const t of tc.policy.tensors) {
    hash.update(t.name);
    for (const buffer of [t.value, t.m, t.v]) {
      const array = tc.policy.params.backend.download(buffer);
      hash.update(new Uint8Array(array.buffer, array.byteOffset, array.byteLength));
    }
  }
  return hash.digest("hex");
}

export async function trainSetting(
  svc: InProcessServiceClient,
  s: Setting,
  o: TrainSettingOptions,
): Promise<SettingRun> {
  const ctx: SettingContext = {
    tokenizer: o.tokenizer,
    seed: o.seed,
    steps: o.steps,
    ...(o.training ? { training: o.training } : {}),
  };
  const metric = s.metric ?? "reward/mean";
  const referenceKl = o.referenceKl ?? s.referenceKl ?? 0;
  const klReference = o.klReference ?? s.klReference ?? "base";
  if (klReference !== "base" && referenceKl === 0)
    throw new RangeError(`${s.name}: a KL reference ("${klReference}") needs a KL weight (referenceKl > 0)`);
  const checkBatches = o.checkBatches ?? CHECK_BATCHES;
  const tc = await trainingClient(svc, s, o);
  // Fresh datasets for each evaluation: an opponent may carry random state between games.
  const evaluationSets = () => ({
    validation: s.validation(ctx, checkBatches),
    ...Object.fromEntries(Object.entries(s.evaluations ?? {}).map(([k, make]) => [k, make(ctx)])),
  });
  const extra = Object.keys(s.evaluations ?? {});
  const startRun = await evaluateNow(tc, evaluationSets(), metric, o.seed, o.tokenizer);
  const start = startRun.results;
  let afterSft: { value: number; malformed: number } | undefined;
  let reference = startRun.sampler;
  let referenceHandle = startRun.handle;
  if (s.sft) {
    await runSftPhase(tc, s.sft, await s.sft.examples(ctx));
    const checked = await evaluateNow(
      tc,
      { validation: s.validation(ctx, checkBatches) },
      metric,
      o.seed,
      o.tokenizer,
    );
    reference = checked.sampler;
    referenceHandle = checked.handle;
    afterSft = {
      value: checked.results.validation?.value ?? 0,
      malformed: checked.results.validation?.malformed ?? 0,
    };
  }
  const validations: Omit<BestSnapshot, "checksum">[] = [];
  const mixedIn = o.pretrainMix
    ? await pretrainMix(o.baseModel, o.tokenizer, o.seed, o.pretrainMix)
    : undefined;
  const records = await trainRl({
    trainingClient: tc,
    dataset: s.train(ctx),
    lossFn: s.lossFn,
    adam: {
      learningRate: o.learningRate ?? s.learningRate,
      gradClipNorm: o.gradClipNorm ?? s.gradClipNorm ?? 0,
      ...(o.weightDecay ? { weightDecay: o.weightDecay } : {}),
    },
    lrSchedule: o.lrSchedule ?? s.lrSchedule ?? "constant",
    ...(o.klCoef ? { klPenalty: { reference, coef: o.klCoef } } : {}),
    ...(referenceKl > 0
      ? {
          lossFnConfig: {
            referenceKl,
            ...(klReference === "start" ? { referenceModel: referenceHandle } : {}),
          },
        }
      : {}),
    advantages: {
      ...(o.scaleByStd ? { scaleByStd: true } : {}),
      ...(o.negativeScale === undefined ? {} : { negativeScale: o.negativeScale }),
    },
    ...(mixedIn ? { mixedIn } : {}),
    validation: {
      dataset: s.validation(ctx),
      every: o.validateEvery ?? Math.max(1, Math.floor(o.steps / 4)),
      // The runner evaluates the start (before any SFT) and the end itself, with its further evaluations.
      baseline: false,
      final: false,
    },
    sink: o.sink,
    seed: o.seed,
    onStep: async ({ step, validated }) => {
      const value = validated?.metrics[`val/${metric}`];
      if (validated && value !== undefined)
        validations.push({ step: step + 1, version: validated.version, value });
    },
  });
  const endRun = await evaluateNow(tc, evaluationSets(), metric, o.seed, o.tokenizer);
  const end = endRun.results;
  const evaluations = Object.fromEntries(
    extra.map((k) => [k, { start: start[k]?.value ?? 0, end: end[k]?.value ?? 0 }]),
  );
  const best = bestOf([
    { step: 0, version: startRun.version, value: start.validation?.value ?? 0 },
    ...validations,
    { step: o.steps, version: endRun.version, value: end.validation?.value ?? 0 },
  ]);
  const snapshot = (version: number) =>
    svc.registry.resolve(formatSamplerHandle({ team: svc.team, adapter: tc.adapterId, version }));
  const [bestRecord, endRecord] = [await snapshot(best.version), await snapshot(endRun.version)];
  const summary: RunSummary = {
    setting: s.name,
    metric,
    validationStart: start.validation?.value ?? 0,
    ...(afterSft === undefined
      ? {}
      : { validationAfterSft: afterSft.value, malformedAfterSft: afterSft.malformed }),
    validationEnd: end.validation?.value ?? 0,
    malformedStart: start.validation?.malformed ?? 0,
    malformedEnd: end.validation?.malformed ?? 0,
    checkEpisodes: end.validation?.episodes ?? 0,
    malformedInputs: { start: start.validation?.inputs ?? [], end: end.validation?.inputs ?? [] },
    validationMetrics: { start: start.validation?.metrics ?? {}, end: end.validation?.metrics ?? {} },
    ...(Object.keys(evaluations).length ? { evaluations } : {}),
    stateSha256: stateSha256(tc),
    snapshotChecksum: endRecord.checksum, // the end check measured the last snapshot
    best: { ...best, checksum: bestRecord.checksum },
  };
  return {
    summary,
    bestFiles: await svc.store.get(bestRecord.path, bestRecord.checksum),
    endFiles: await svc.store.get(endRecord.path, endRecord.checksum),
    metric,
    validationStart: summary.validationStart,
    ...(afterSft === undefined ? {} : { validationAfterSft: afterSft.value }),
    records,
  };
}
