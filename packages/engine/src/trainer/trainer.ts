// forward / forwardBackward / optimStep over one policy (C2): gradients
// accumulate across calls until the optimizer step. Every input is validated
// before any computation, so a bad call leaves weights, gradients and optimizer
// state exactly as they were.
import {
  type AdamParamsInput,
  type Datum,
  type ForwardBackwardOutput,
  float32Tensor,
  type LossFn,
  type LossFnConfig,
  nonFiniteMessage,
  type OptimStepOutput,
  ZAdamParams,
  ZLossFn,
  ZLossFnConfig,
} from "@opentinker/protocol";
import { Arena } from "../nn/arena.ts";
import type { ModelParams } from "../nn/params.ts";
import { backward, finalHidden, forward, type PackedBatch } from "../nn/transformer.ts";
import { type ReferenceKl, referenceKlSum } from "../nn/unembed.ts";
import { frozenParams } from "../policy/frozen.ts";
import { type Policy, zeroGrads } from "../policy/policy.ts";
import { type PreparedImage, prepareInput } from "../vision/input.ts";
import { groupByTokens, pack } from "./batching.ts";
import { type DatumLossInputs, emptyTotals, lossAndGrad, lossMetrics, readLossInputs } from "./losses.ts";

/** The largest float32 whose square is still finite. */
const FLOAT32_SQUARE_LIMIT = Math.sqrt(3.4028234663852886e38);

export interface TrainerOptions {
  /** Tokens per forward pass; larger batches run as several passes (same result). */
  maxTokensPerPass?: number;
}

interface Prepared extends DatumLossInputs {
  index: number;
  tokens: Int32Array;
  images: PreparedImage[];
}

function zodMessage(context: string, error: { issues: { path: PropertyKey[]; message: string }[] }): string {
  const issue = error.issues[0];
  return `${context}: ${issue?.path.map(String).join(".") || "value"}: ${issue?.message}`;
}

/** Logprobs with 0 at image targets (placeholders the model does not predict). */
function withoutImageTargets(logprobs: Float32Array, marks: Uint8Array): Float32Array {
  return logprobs.map((lp, j) => (marks[j] ? 0 : lp));
}

export class Trainer {
  private readonly maxTokensPerPass: number;
  /** The frozen base's weights, lossFnConfig.referenceKl's reference when the call names none (made on first use). */
  private baseParams?: ModelParams;

  constructor(
    readonly policy: Policy,
    options: TrainerOptions = {},
  ) {
    this.maxTokensPerPass = options.maxTokensPerPass ?? 4096;
  }

  /** Per-token logprobs and loss metrics, without touching gradients. */
  forward(data: Datum[], lossFn: LossFn, config?: Partial<LossFnConfig>): ForwardBackwardOutput {
    return this.run("forward", data, lossFn, config, false);
  }

  /**
   * Like forward, and adds this batch's gradients to the accumulated ones.
   * `reference`: the weights of the snapshot lossFnConfig.referenceModel names
   * (loaded by the caller, which resolves handles); without it, the frozen base.
   */
  forwardBackward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
    reference?: ModelParams,
  ): ForwardBackwardOutput {
    return this.run("forwardBackward", data, lossFn, config, true, reference);
  }

  /** Applies AdamW to the accumulated gradients, then clears them. */
  optimStep(adamInput: AdamParamsInput = {}): OptimStepOutput {
    const parsed = ZAdamParams.safeParse(adamInput);
    if (!parsed.success) throw new RangeError(zodMessage("optimStep", parsed.error));
    const adam = parsed.data;
    if (!this.policy.hasGrad)
      throw new Error("optimStep: no gradients were accumulated since the last optimStep");
    const be = this.policy.params.backend;
    const norm = Math.sqrt(be.sumOfSquares(this.policy.tensors.map((t) => t.grad)));
    if (!Number.isFinite(norm)) this.refuseGradient("gradient norm", norm);
    const scale = adam.gradClipNorm > 0 && norm > adam.gradClipNorm ? adam.gradClipNorm / norm : 1;
    // AdamW squares each scaled gradient in float32: past this its second moment
    // would be Infinity, and that weight frozen for good.
    if (norm * scale > FLOAT32_SQUARE_LIMIT)
      this.refuseGradient(
        `squared gradient in float32 (gradient norm ${(norm * scale).toExponential(2)})`,
        Number.POSITIVE_INFINITY,
      );
    const step = this.policy.step + 1;
    const hyper = {
      lr: adam.learningRate,
      beta1: adam.beta1,
      beta2: adam.beta2,
      eps: adam.eps,
      weightDecay: adam.weightDecay,
      step,
      gradScale: scale,
    };
    for (const t of this.policy.tensors) be.adamwStep(t.value, t.grad, t.m, t.v, hyper);
    this.policy.step = step;
    zeroGrads(this.policy);
    return {
      metrics: { "grad_norm:value": norm, "learning_rate:value": adam.learningRate, "step:value": step },
    };
  }

  /** Clears the gradients and throws: the update is not applied. */
  private refuseGradient(what: string, value: number): never {
    zeroGrads(this.policy);
    throw new RangeError(
      nonFiniteMessage(
        "optimStep",
        what,
        value,
        "the step was not applied (weights and AdamW moments unchanged) and the gradients were cleared",
      ),
    );
  }

  /** Clears the gradients (earlier passes of the call may have added to them) and throws. */
  private refuseNonFiniteLoss(op: string, loss: number, index: number): never {
    zeroGrads(this.policy);
    throw new RangeError(
      nonFiniteMessage(
        op,
        `loss at data[${index}]`,
        loss,
        "no gradients were added and the accumulated ones were cleared (weights and AdamW moments unchanged)",
      ),
    );
  }

  private prepare(op: string, data: Datum[], lossFn: LossFn): Prepared[] {
    if (!Array.isArray(data) || data.length === 0)
      throw new RangeError(`${op}: data must be a non-empty array of datums`);
    const config = this.policy.base.config;
    return data.map((datum, index) => {
      const context = `${op}: data[${index}]`;
      const { tokens, images } = prepareInput(datum.modelInput, config, context);
      return { index, tokens, images, ...readLossInputs(datum, lossFn, config.vocabSize, context, images) };
    });
  }

  /**
   * The reference's distributions on the batch, weighted by `coef` at every
   * position whose target is a token (prompts and observations too, not only
   * what the loss trains: the anchor then covers the contexts RL moves indirectly).
   */
  private referenceKl(
    batch: PackedBatch,
    group: Prepared[],
    coef: number,
    params: ModelParams,
    arena: Arena,
  ): { kl: ReferenceKl; positions: number } {
    const weights = new Float32Array(batch.tokens.length).fill(coef);
    group.forEach((item, i) => {
      const start = batch.seqStarts[i] as number;
      item.imageTargets?.forEach((mark, t) => {
        if (mark) weights[start + t] = 0;
      });
    });
    const kl: ReferenceKl = {
      params,
      hidden: finalHidden(params, batch, arena),
      weights: arena.upload(weights),
      perRow: arena.alloc("f64", [weights.length]),
    };
    return { kl, positions: weights.filter((w) => w > 0).length };
  }

  /** What referenceKl measures against: the weights the caller loaded for referenceModel, else the frozen base. */
  private klReference(op: string, config: LossFnConfig, given: ModelParams | undefined): ModelParams {
    if (given) return given;
    if (config.referenceModel !== undefined)
      throw new RangeError(
        `${op}: lossFnConfig.referenceModel ${config.referenceModel} was not loaded: name it through a policy session, which resolves handles`,
      );
    this.baseParams ??= frozenParams(this.policy.base);
    return this.baseParams;
  }

  private run(
    op: string,
    data: Datum[],
    lossFnInput: LossFn,
    configInput: Partial<LossFnConfig> | undefined,
    train: boolean,
    reference?: ModelParams,
  ): ForwardBackwardOutput {
    const lossFn = ZLossFn.safeParse(lossFnInput);
    if (!lossFn.success) {
      throw new RangeError(
        `${op}: unknown loss "${String(lossFnInput)}" (expected ${ZLossFn.options.join(", ")})`,
      );
    }
    const config = ZLossFnConfig.safeParse(configInput ?? {});
    if (!config.success) throw new RangeError(zodMessage(`${op}: lossFnConfig`, config.error));
    const prepared = this.prepare(op, data, lossFn.data);
    const klCoef = train ? config.data.referenceKl : 0;
    const klReference = klCoef > 0 ? this.klReference(op, config.data, reference) : undefined;

    const logprobsOut: Float32Array[] = new Array(prepared.length);
    const totals = emptyTotals();
    let klSum = 0;
    let klPositions = 0;
    const be = this.policy.params.backend;
    for (const group of groupByTokens(prepared, this.maxTokensPerPass)) {
      let nonFiniteAt: number | undefined;
      const batch = pack(group);
      // The pass's activations live on the device until its backward is done.
      const arena = new Arena(be);
      try {
        const { logprobs: onDevice, tape } = forward(this.policy.params, batch, arena);
        // The step's output: per-token logprobs (the losses below are host arithmetic over [T]).
        const logprobs = be.download(onDevice);
        const dLoss = new Float32Array(logprobs.length);
        group.forEach((item, i) => {
          const start = batch.seqStarts[i] as number;
          const own = logprobs.slice(start, start + item.tokens.length);
          lossAndGrad(
            lossFn.data,
            config.data,
            item,
            own,
            dLoss.subarray(start, start + item.tokens.length),
            totals,
          );
          // Once non-finite the sum stays so: the first datum that made it so is the culprit.
          if (nonFiniteAt === undefined && !Number.isFinite(totals.loss)) nonFiniteAt = item.index;
          logprobsOut[item.index] = item.imageTargets ? withoutImageTargets(own, item.imageTargets) : own;
        });
        if (train) {
          // A non-finite loss would spread NaN into every gradient it reaches: refuse the call instead.
          if (nonFiniteAt !== undefined) this.refuseNonFiniteLoss(op, totals.loss, nonFiniteAt);
          const reference = klReference && this.referenceKl(batch, group, klCoef, klReference, arena);
          backward(this.policy.params, tape, arena.upload(dLoss), reference?.kl);
          if (reference) {
            klSum += referenceKlSum(be.download(reference.kl.perRow), klReference.shape.vocabSize);
            klPositions += reference.positions;
          }
          this.policy.hasGrad = true;
        }
      } finally {
        arena.release();
      }
    }
    const metrics = lossMetrics(lossFn.data, totals);
    // Per position, unweighted, and kept out of loss:sum, which forward reports alike.
    if (klCoef > 0) metrics["reference_kl:mean"] = klPositions ? klSum / klCoef / klPositions : 0;
    return {
      lossFnOutputs: logprobsOut.map((lp) => ({ logprobs: float32Tensor(Array.from(lp)) })),
      metrics,
    };
  }
}
