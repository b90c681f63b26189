import { z } from "zod";
import { DIVERGENCE_BOUNDS } from "./divergence.ts";
import { ZSamplerHandle } from "./handles.ts";
import { ZTensorData } from "./tensor.ts";

/** Server-side losses, summed over target tokens (DESIGN.md C10); cispo and dro as Tinker defines them. */
export const ZLossFn = z.enum(["cross_entropy", "importance_sampling", "ppo", "cispo", "dro"]);
export type LossFn = z.infer<typeof ZLossFn>;
/** The losses that train on rollouts (logprobs, advantages, mask). */
export type RlLossFn = Exclude<LossFn, "cross_entropy">;

// beta: Tinker documents no default for dro; 0.05 is the value its own example passes.
const LOSS_FN_DEFAULTS = { clipLowThreshold: 0.8, clipHighThreshold: 1.2, beta: 0.05, referenceKl: 0 };

interface LossFnConfigChecks {
  clipLowThreshold?: number;
  clipHighThreshold?: number;
  referenceKl?: number;
  referenceModel?: string;
}

/** What no single field can check: the clip range's order, and a reference with no KL to weigh it. */
const crossChecks = (c: LossFnConfigChecks, ctx: z.RefinementCtx) => {
  const low = c.clipLowThreshold ?? LOSS_FN_DEFAULTS.clipLowThreshold;
  const high = c.clipHighThreshold ?? LOSS_FN_DEFAULTS.clipHighThreshold;
  if (low > high)
    ctx.addIssue({
      code: "custom",
      path: ["clipLowThreshold"],
      message: `${low} exceeds clipHighThreshold ${high}`,
    });
  if (namesUnusedReference(c))
    ctx.addIssue({ code: "custom", path: ["referenceModel"], message: UNUSED_REFERENCE });
};

/** A config that names a KL reference with the KL off: refused, since the reference would do nothing. */
export const namesUnusedReference = (c: { referenceKl?: number; referenceModel?: string }): boolean =>
  c.referenceModel !== undefined && !(c.referenceKl && c.referenceKl > 0);
export const UNUSED_REFERENCE =
  "names the reference of referenceKl, which is 0 (off): set referenceKl > 0 or leave it out";

/**
 * forwardBackward (an OpenTinker extension): weight of a full-vocabulary
 * KL(π_ref ‖ π) at every position of each datum whose target is a token
 * (prompt, observations and actions alike), π_ref the reference's next-token
 * distribution (the frozen base model's unless referenceModel names another).
 * It holds every token's probability near the reference's, sampled or not,
 * where the sampled-token penalties cannot. 0: off.
 */
export const ZReferenceKl = z.number().nonnegative().finite();

/**
 * forwardBackward (an OpenTinker extension): the policy referenceKl holds the
 * trained one near, in place of the frozen base — a sampler handle of one of
 * the team's snapshots (or one another team publishes) over the same base
 * model, e.g. the policy RL starts from after SFT, so the KL keeps what SFT
 * taught. A snapshot never changes, so every call that names it, on any
 * worker and after any restart, measures against the same policy.
 */
export const ZReferenceModel = ZSamplerHandle;

const lossFnSettings = {
  /** ppo and cispo: the ratio is clipped to [clipLowThreshold, clipHighThreshold]. */
  clipLowThreshold: z.number().positive().finite(),
  clipHighThreshold: z.number().positive().finite(),
  /** dro: weight of the quadratic penalty ½·beta·(logp − logp_sampler)². */
  beta: z.number().nonnegative().finite(),
  referenceKl: ZReferenceKl,
  referenceModel: ZReferenceModel,
};

export const ZLossFnConfig = z
  .object({
    clipLowThreshold: lossFnSettings.clipLowThreshold.default(LOSS_FN_DEFAULTS.clipLowThreshold),
    clipHighThreshold: lossFnSettings.clipHighThreshold.default(LOSS_FN_DEFAULTS.clipHighThreshold),
    beta: lossFnSettings.beta.default(LOSS_FN_DEFAULTS.beta),
    referenceKl: lossFnSettings.referenceKl.default(LOSS_FN_DEFAULTS.referenceKl),
    referenceModel: lossFnSettings.referenceModel.optional(),
  })
  .superRefine(crossChecks);
export type LossFnConfig = z.infer<typeof ZLossFnConfig>;

/** Loss-function settings a call may override; checked together with the defaults of the rest. */
export const ZLossFnConfigInput = z.object(lossFnSettings).partial().strict().superRefine(crossChecks);

/** Which lossFnInputs each loss needs (all on the target axis, one value per target). */
export const LOSS_INPUTS: Record<LossFn, readonly string[]> = {
  cross_entropy: ["targetTokens", "weights"],
  importance_sampling: ["targetTokens", "logprobs", "advantages", "mask"],
  ppo: ["targetTokens", "logprobs", "advantages", "mask"],
  cispo: ["targetTokens", "logprobs", "advantages", "mask"],
  dro: ["targetTokens", "logprobs", "advantages", "mask"],
};

export const ZAdamParams = z.object({
  // AdamW moves each weight by about the learning rate per step: past 1 a run only diverges.
  learningRate: z
    .number()
    .nonnegative()
    .max(
      DIVERGENCE_BOUNDS.maxLearningRate,
      `learningRate must be at most ${DIVERGENCE_BOUNDS.maxLearningRate}`,
    )
    .default(1e-4),
  beta1: z.number().min(0).lt(1).default(0.9),
  beta2: z.number().min(0).lt(1).default(0.95),
  // 0 divides a weight whose gradient has always been 0 by 0: NaN weights, not a divergence.
  eps: z.number().positive("eps must be greater than 0").finite().default(1e-12),
  weightDecay: z.number().nonnegative().finite().default(0),
  /** Global gradient-norm clipping; 0 turns it off. */
  gradClipNorm: z.number().nonnegative().finite().default(0),
});
export type AdamParams = z.infer<typeof ZAdamParams>;
export type AdamParamsInput = z.input<typeof ZAdamParams>;

/**
 * How an RL run's learning rate moves from its peak (`adam.learningRate`):
 * held, or decayed to 0 by the end of the run, linearly or along a half cosine
 * (the Tinker cookbook's names and shapes). A decay lets a run settle instead
 * of drifting late.
 */
export const ZLrSchedule = z.enum(["constant", "linear", "cosine"]);
export type LrSchedule = z.infer<typeof ZLrSchedule>;

/** The fraction of the peak learning rate used at step `step` (from 0) of a `steps`-step run. */
export function lrMultiplier(schedule: LrSchedule, step: number, steps: number): number {
  const progress = Math.min(1, Math.max(0, step / Math.max(1, steps)));
  if (schedule === "linear") return 1 - progress;
  if (schedule === "cosine") return 0.5 * (1 + Math.cos(Math.PI * progress));
  return 1;
}

export const ZForwardBackwardOutput = z.object({
  /** Per datum: `logprobs` of each target token under the current policy. */
  lossFnOutputs: z.array(z.record(z.string(), ZTensorData)),
  /** Named `name:reduction`, e.g. `loss:sum`, `clipfrac:mean`. */
  metrics: z.record(z.string(), z.number()),
});
export type ForwardBackwardOutput = z.infer<typeof ZForwardBackwardOutput>;

export const ZOptimStepOutput = z.object({ metrics: z.record(z.string(), z.number()) });
export type OptimStepOutput = z.infer<typeof ZOptimStepOutput>;
