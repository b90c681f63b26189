// The server-side losses (DESIGN.md C10), summed over target tokens, with their
// gradient with respect to each token's logprob. r = exp(logp − logp_sampler).
// cispo and dro follow Tinker's definitions, so its clients get the same updates.
import {
  type Datum,
  LOSS_INPUTS,
  type LossFn,
  type LossFnConfig,
  lossInput,
  modelInputLength,
} from "@opentinker/protocol";
import type { PreparedImage } from "../vision/input.ts";

/** The loss inputs of one datum, validated, on its target axis. */
export interface DatumLossInputs {
  targets: Int32Array; // [T]
  weights: Float32Array; // [T] cross_entropy: the weights; RL: the mask
  oldLogprobs: Float32Array; // [T] RL only (zeros otherwise)
  advantages: Float32Array; // [T] RL only
  /**
   * [T] 1 where the target is an image position (a placeholder, not a token the
   * model predicts): never weighted, its logprob reported as 0. Absent without images.
   */
  imageTargets?: Uint8Array;
}

/** Target j is the token at position j + 1: an image over positions [s, s + n) covers targets [s − 1, s + n − 1). */
function imageTargetsOf(images: readonly PreparedImage[], length: number): Uint8Array | undefined {
  if (images.length === 0) return undefined;
  const marks = new Uint8Array(length);
  for (const image of images) {
    marks.fill(1, Math.max(0, image.start - 1), Math.min(length, image.start + image.length - 1));
  }
  return marks;
}

function checkNoLossOnImages(
  weights: Float32Array,
  marks: Uint8Array | undefined,
  name: string,
  context: string,
): void {
  if (!marks) return;
  weights.forEach((w, j) => {
    if (w !== 0 && marks[j]) {
      throw new RangeError(
        `${context}: lossFnInputs.${name}[${j}] is ${w}, but target ${j} is an image position ` +
          "(image positions carry no loss; give them 0)",
      );
    }
  });
}

function finiteArray(values: number[], name: string, context: string): Float32Array {
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    if (!Number.isFinite(v))
      throw new RangeError(`${context}: lossFnInputs.${name}[${i}] is ${v}, expected a finite number`);
    out[i] = v;
  }
  return out;
}

/**
 * Checks a datum's loss inputs for `lossFn` (names, lengths, ranges) and converts
 * them. `images` are the datum's prepared images: their target positions hold
 * placeholders (any id; computed as token 0) and must carry no loss.
 */
export function readLossInputs(
  datum: Datum,
  lossFn: LossFn,
  vocabSize: number,
  context: string,
  images: readonly PreparedImage[] = [],
): DatumLossInputs {
  const length = modelInputLength(datum.modelInput);
  if (length === 0) throw new RangeError(`${context}: the datum is empty`);
  for (const name of LOSS_INPUTS[lossFn]) lossInput(datum, name, context);
  const marks = imageTargetsOf(images, length);
  const targets = Int32Array.from(lossInput(datum, "targetTokens", context), (t, i) => {
    if (marks?.[i]) return 0;
    if (!Number.isInteger(t) || t < 0 || t >= vocabSize) {
      throw new RangeError(
        `${context}: lossFnInputs.targetTokens[${i}] is ${t}, expected a token id in [0, ${vocabSize})`,
      );
    }
    return t;
  });
  if (lossFn === "cross_entropy") {
    const weights = finiteArray(lossInput(datum, "weights", context), "weights", context);
    checkNoLossOnImages(weights, marks, "weights", context);
    return {
      targets,
      weights,
      oldLogprobs: new Float32Array(length),
      advantages: new Float32Array(length),
      ...(marks ? { imageTargets: marks } : {}),
    };
  }
  const mask = finiteArray(lossInput(datum, "mask", context), "mask", context);
  mask.forEach((m, i) => {
    if (m !== 0 && m !== 1)
      throw new RangeError(`${context}: lossFnInputs.mask[${i}] is ${m}, expected 0 or 1`);
  });
  checkNoLossOnImages(mask, marks, "mask", context);
  return {
    targets,
    weights: mask,
    oldLogprobs: finiteArray(lossInput(datum, "logprobs", context), "logprobs", context),
    advantages: finiteArray(lossInput(datum, "advantages", context), "advantages", context),
    ...(marks ? { imageTargets: marks } : {}),
  };
}

/** Sums that become the step's metrics (named `name:reduction`). */
export interface LossTotals {
  loss: number;
  /** Tokens with weight > 0 (cross_entropy) or on the mask (RL). */
  tokens: number;
  weightSum: number;
  ratioSum: number;
  clipped: number;
  logprobSum: number;
}

export const emptyTotals = (): LossTotals => ({
  loss: 0,
  tokens: 0,
  weightSum: 0,
  ratioSum: 0,
  clipped: 0,
  logprobSum: 0,
});

/**
 * Adds one datum's loss to `totals` and writes dLoss/dlogp per token into `grad`.
 * Positions off the mask contribute nothing, whatever their advantage; a zero
 * advantage on the mask is still an action token (counted in the ratio stats).
 */
export function lossAndGrad(
  lossFn: LossFn,
  config: LossFnConfig,
  inputs: DatumLossInputs,
  logprobs: Float32Array,
  grad: Float32Array,
  totals: LossTotals,
): void {
  const { weights, oldLogprobs, advantages } = inputs;
  for (let t = 0; t < logprobs.length; t++) {
    const w = weights[t] as number;
    const logp = logprobs[t] as number;
    if (w === 0) {
      grad[t] = 0;
      continue;
    }
    totals.tokens += 1;
    totals.weightSum += w;
    totals.logprobSum += logp;
    if (lossFn === "cross_entropy") {
      totals.loss -= w * logp;
      grad[t] = -w;
      continue;
    }
    const a = advantages[t] as number;
    const ratio = Math.exp(logp - (oldLogprobs[t] as number));
    totals.ratioSum += ratio;
    if (lossFn === "importance_sampling") {
      totals.loss -= ratio * a;
      grad[t] = -ratio * a;
      continue;
    }
    if (lossFn === "dro") {
      // −(logp·A − ½β·(logp − logp_old)²): the penalty keeps the policy near the sampler.
      const drift = logp - (oldLogprobs[t] as number);
      totals.loss -= logp * a - 0.5 * config.beta * drift * drift;
      grad[t] = -a + config.beta * drift;
      continue;
    }
    const clippedRatio = Math.min(Math.max(ratio, config.clipLowThreshold), config.clipHighThreshold);
    if (lossFn === "cispo") {
      // −sg(clip(r))·logp·A: the clipped ratio only weights the gradient, so every token keeps one.
      if (clippedRatio !== ratio) totals.clipped += 1;
      totals.loss -= clippedRatio * logp * a;
      grad[t] = -clippedRatio * a;
      continue;
    }
    // ppo: −min(r·A, clip(r)·A); the clipped branch has no gradient.
    const unclipped = ratio * a;
    const clipped = clippedRatio * a;
    if (clippedRatio !== ratio) totals.clipped += 1;
    if (unclipped <= clipped) {
      totals.loss -= unclipped;
      grad[t] = -ratio * a;
    } else {
      totals.loss -= clipped;
      grad[t] = 0;
    }
  }
}

/** The call's metrics from its totals. */
export function lossMetrics(lossFn: LossFn, totals: LossTotals): Record<string, number> {
  const metrics: Record<string, number> = {
    "loss:sum": totals.loss,
    "tokens:sum": totals.tokens,
    "logprob:mean": totals.tokens ? totals.logprobSum / totals.tokens : 0,
  };
  if (lossFn === "cross_entropy") {
    metrics["weight:sum"] = totals.weightSum;
    metrics["loss:mean"] = totals.weightSum ? totals.loss / totals.weightSum : 0;
  } else {
    metrics["ratio:mean"] = totals.tokens ? totals.ratioSum / totals.tokens : 0;
    if (lossFn === "ppo" || lossFn === "cispo")
      metrics["clipfrac:mean"] = totals.tokens ? totals.clipped / totals.tokens : 0;
  }
  return metrics;
}
