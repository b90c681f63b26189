// forward / forwardBackward / optimStep over one policy (C2): gradients
// accumulate across calls until the optimizer step. Every input is validated
// before any computation, so a bad call leaves weights, gradients and optimizer
// state exactly as they were.
import { adamwStep, gradNorm } from "@opentinker/kernels";
import {
  type AdamParamsInput,
  type Datum,
  type ForwardBackwardOutput,
  float32Tensor,
  type LossFn,
  type LossFnConfig,
  type OptimStepOutput,
  ZAdamParams,
  ZLossFn,
  ZLossFnConfig,
} from "@opentinker/protocol";
import { backward, forward } from "../nn/transformer.ts";
import { type Policy, zeroGrads } from "../policy/policy.ts";
import { type PreparedImage, prepareInput } from "../vision/input.ts";
import { groupByTokens, pack } from "./batching.ts";
import { type DatumLossInputs, emptyTotals, lossAndGrad, lossMetrics, readLossInputs } from "./losses.ts";

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

  /** Like forward, and adds this batch's gradients to the accumulated ones. */
  forwardBackward(data: Datum[], lossFn: LossFn, config?: Partial<LossFnConfig>): ForwardBackwardOutput {
    return this.run("forwardBackward", data, lossFn, config, true);
  }

  /** Applies AdamW to the accumulated gradients, then clears them. */
  optimStep(adamInput: AdamParamsInput = {}): OptimStepOutput {
    const parsed = ZAdamParams.safeParse(adamInput);
    if (!parsed.success) throw new RangeError(zodMessage("optimStep", parsed.error));
    const adam = parsed.data;
    if (!this.policy.hasGrad)
      throw new Error("optimStep: no gradients were accumulated since the last optimStep");
    const grads = this.policy.tensors.map((t) => t.grad);
    const norm = gradNorm(grads);
    if (!Number.isFinite(norm)) {
      zeroGrads(this.policy);
      throw new RangeError(
        `optimStep: the gradient norm is ${norm}; the step was not applied and the gradients were cleared`,
      );
    }
    const scale = adam.gradClipNorm > 0 && norm > adam.gradClipNorm ? adam.gradClipNorm / norm : 1;
    const step = this.policy.step + 1;
    for (const t of this.policy.tensors) {
      adamwStep(
        t.value,
        t.grad,
        t.m,
        t.v,
        adam.learningRate,
        adam.beta1,
        adam.beta2,
        adam.eps,
        adam.weightDecay,
        step,
        scale,
      );
    }
    this.policy.step = step;
    zeroGrads(this.policy);
    return {
      metrics: { "grad_norm:value": norm, "learning_rate:value": adam.learningRate, "step:value": step },
    };
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

  private run(
    op: string,
    data: Datum[],
    lossFnInput: LossFn,
    configInput: Partial<LossFnConfig> | undefined,
    train: boolean,
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

    const logprobsOut: Float32Array[] = new Array(prepared.length);
    const totals = emptyTotals();
    for (const group of groupByTokens(prepared, this.maxTokensPerPass)) {
      const batch = pack(group);
      const { logprobs, tape } = forward(this.policy.params, batch);
      const dLoss = new Float32Array(logprobs.length);
      group.forEach((item, i) => {
        const start = batch.seqStarts[i] as number;
        const own = logprobs.subarray(start, start + item.tokens.length);
        lossAndGrad(
          lossFn.data,
          config.data,
          item,
          own,
          dLoss.subarray(start, start + item.tokens.length),
          totals,
        );
        logprobsOut[item.index] = item.imageTargets ? withoutImageTargets(own, item.imageTargets) : own;
      });
      if (train) {
        // backward takes dL/dlogp; the tape's memory is released when it returns.
        backward(this.policy.params, tape, dLoss);
        this.policy.hasGrad = true;
      }
    }
    return {
      lossFnOutputs: logprobsOut.map((lp) => ({ logprobs: float32Tensor(Array.from(lp)) })),
      metrics: lossMetrics(lossFn.data, totals),
    };
  }
}
