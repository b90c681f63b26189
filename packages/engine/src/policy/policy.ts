// A policy over a frozen base (C1): LoRA adapters or full-parameter weights,
// each with its own gradients, AdamW moments and step. Many live over one base.
import type { BaseModel } from "../base-model.ts";
import type { ModelParams } from "../nn/params.ts";
import type { TrainableTensor } from "./tensor.ts";

export interface LoraSpec {
  rank: number;
  alpha: number;
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
  seed: number;
}

export type PolicyKind = "lora" | "full";

export interface Policy {
  readonly kind: PolicyKind;
  readonly base: BaseModel;
  readonly lora?: LoraSpec;
  /** Every trainable tensor, in a fixed order (the optimizer's and checkpoints'). */
  readonly tensors: readonly TrainableTensor[];
  /** The weights a forward pass uses: base overlaid with this policy. */
  readonly params: ModelParams;
  /** Optimizer steps applied. */
  step: number;
  /** Whether gradients were accumulated since the last optimizer step. */
  hasGrad: boolean;
}

export function zeroGrads(policy: Policy): void {
  for (const t of policy.tensors) policy.params.backend.fill(t.grad, 0);
  policy.hasGrad = false;
}
