// Pretraining on the engine's full-parameter path: createFullPolicy + Trainer
// (cross_entropy, AdamW), a fixed number of steps over the corpus in seeded
// order, warmup then cosine decay. Each batch's weights sum to 1, so the loss is
// a per-action-token mean and gradient clipping means the same at any batch size.
import { type BaseModel, createFullPolicy, type Policy, Trainer } from "@opentinker/engine";
import { seededRandom } from "@opentinker/envs";
import { buildSftDatum, type Datum } from "@opentinker/protocol";
import { type Example, shuffle } from "../corpus/index.ts";

export interface PretrainOptions {
  steps: number;
  /** Examples per step. */
  batchSize: number;
  learningRate: number;
  /** Steps of linear warmup. */
  warmupSteps: number;
  /** The learning rate decays (cosine) to this fraction of its peak. */
  finalLrRatio: number;
  weightDecay: number;
  gradClipNorm: number;
  /** Orders the examples of every pass. */
  seed: number;
}

export interface PretrainStep {
  step: number;
  /** Mean cross-entropy per action token. */
  loss: number;
  learningRate: number;
  gradNorm: number;
}

export function learningRateAt(o: PretrainOptions, step: number): number {
  if (step < o.warmupSteps) return (o.learningRate * (step + 1)) / o.warmupSteps;
  const progress = (step - o.warmupSteps) / Math.max(1, o.steps - o.warmupSteps);
  const cosine = 0.5 * (1 + Math.cos(Math.PI * Math.min(1, progress)));
  return o.learningRate * (o.finalLrRatio + (1 - o.finalLrRatio) * cosine);
}

function batchDatums(batch: readonly Example[]): Datum[] {
  const total = batch.reduce((sum, e) => sum + e.weights.reduce((a, w) => a + w, 0), 0);
  if (total === 0) throw new Error("pretrain: a batch has no weighted token");
  return batch.map((e) =>
    buildSftDatum({
      sequence: e.input ? { input: e.input, tokens: e.tokens } : e.tokens,
      weights: e.weights.map((w) => w / total),
    }),
  );
}

/**
 * Trains a full-parameter copy of `base` and returns it (its tensors hold the new
 * weights). `onStep` is awaited after every step (progress, or probing the policy).
 */
export async function pretrain(
  base: BaseModel,
  examples: readonly Example[],
  o: PretrainOptions,
  onStep?: (step: PretrainStep, policy: Policy) => void | Promise<void>,
): Promise<Policy> {
  if (examples.length < o.batchSize)
    throw new RangeError(`pretrain: ${examples.length} examples is fewer than one batch of ${o.batchSize}`);
  const policy = createFullPolicy(base);
  const trainer = new Trainer(policy);
  const random = seededRandom(o.seed);
  let order = shuffle([...examples], random);
  let next = 0;
  for (let step = 0; step < o.steps; step++) {
    if (next + o.batchSize > order.length) {
      order = shuffle(order, random);
      next = 0;
    }
    const batch = order.slice(next, next + o.batchSize);
    next += o.batchSize;
    const learningRate = learningRateAt(o, step);
    const out = trainer.forwardBackward(batchDatums(batch), "cross_entropy");
    const opt = trainer.optimStep({
      learningRate,
      weightDecay: o.weightDecay,
      gradClipNorm: o.gradClipNorm,
    });
    await onStep?.(
      {
        step,
        loss: out.metrics["loss:sum"] as number,
        learningRate,
        gradNorm: opt.metrics["grad_norm:value"] as number,
      },
      policy,
    );
  }
  return policy;
}
