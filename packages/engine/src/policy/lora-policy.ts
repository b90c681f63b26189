import type { Backend } from "@opentinker/kernels";
import type { BaseModel } from "../base-model.ts";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams } from "../nn/params.ts";
import { Rng } from "../rng.ts";
import { frozenLinear, frozenParams } from "./frozen.ts";
import type { LoraSpec, Policy } from "./policy.ts";
import { type TrainableTensor, trainable } from "./tensor.ts";

export type AttnModule = "q" | "k" | "v" | "o";
export type MlpModule = "gate" | "up" | "down";
export const ATTN_MODULES: readonly AttnModule[] = ["q", "k", "v", "o"];
export const MLP_MODULES: readonly MlpModule[] = ["gate", "up", "down"];

/** PEFT's name of a module's LoRA matrix (so export is a straight copy). */
export function peftName(
  module: AttnModule | MlpModule | "unembed",
  layer: number,
  matrix: "A" | "B",
): string {
  if (module === "unembed") return `base_model.model.lm_head.lora_${matrix}.weight`;
  const path = (ATTN_MODULES as readonly string[]).includes(module)
    ? `self_attn.${module}_proj`
    : `mlp.${module}_proj`;
  return `base_model.model.model.layers.${layer}.${path}.lora_${matrix}.weight`;
}

/**
 * A's standard init (PEFT's kaiming-uniform with a = √5): U(−1/√dIn, 1/√dIn);
 * B starts at zero, so a new adapter leaves the base model's outputs unchanged.
 */
function adapterTensors(
  be: Backend,
  rng: Rng,
  nameA: string,
  nameB: string,
  rank: number,
  dIn: number,
  dOut: number,
) {
  const bound = 1 / Math.sqrt(dIn);
  const a = new Float32Array(rank * dIn);
  for (let i = 0; i < a.length; i++) a[i] = rng.uniform(bound);
  return {
    a: trainable(be, nameA, [rank, dIn], a),
    b: trainable(be, nameB, [dOut, rank], new Float32Array(dOut * rank)),
  };
}

/** The tables reference the tensors' buffers: an optimizer step on them is what the next forward uses. */
function attach(
  be: Backend,
  p: LinearParams,
  a: TrainableTensor,
  b: TrainableTensor,
  scale: number,
): LinearParams {
  return {
    ...p,
    lora: {
      table: be.createLoraTable(p.dIn, p.dOut, [{ a: a.value, b: b.value, scale }]),
      grads: be.createLoraTable(p.dIn, p.dOut, [{ a: a.grad, b: b.grad, scale: 1 }]),
    },
  };
}

/** A new LoRA policy over `base` (C1), with seeded A and zero B. */
export function createLoraPolicy(base: BaseModel, spec: LoraSpec): Policy {
  if (!Number.isInteger(spec.rank) || spec.rank < 1)
    throw new RangeError(`LoRA rank must be an integer ≥ 1, got ${spec.rank}`);
  if (!Number.isFinite(spec.alpha) || spec.alpha <= 0)
    throw new RangeError(`LoRA alpha must be > 0, got ${spec.alpha}`);
  if (!spec.trainAttn && !spec.trainMlp && !spec.trainUnembed) {
    throw new RangeError("a LoRA policy must train at least one of attention, MLP or unembedding");
  }
  const rng = new Rng(spec.seed);
  const scale = spec.alpha / spec.rank;
  const frozen = frozenParams(base);
  const be = frozen.backend;
  const tensors: TrainableTensor[] = [];
  const modules: string[] = [...(spec.trainAttn ? ATTN_MODULES : []), ...(spec.trainMlp ? MLP_MODULES : [])];
  const layers: LayerParams[] = frozen.layers.map((layer, l) => {
    const out: LayerParams = { ...layer };
    for (const module of modules as (AttnModule | MlpModule)[]) {
      const p = layer[module];
      const { a, b } = adapterTensors(
        be,
        rng,
        peftName(module, l, "A"),
        peftName(module, l, "B"),
        spec.rank,
        p.dIn,
        p.dOut,
      );
      tensors.push(a, b);
      out[module] = attach(be, p, a, b, scale);
    }
    return out;
  });
  let unembed = frozen.unembed;
  if (spec.trainUnembed) {
    const { hiddenSize, vocabSize } = base.config;
    const { a, b } = adapterTensors(
      be,
      rng,
      peftName("unembed", 0, "A"),
      peftName("unembed", 0, "B"),
      spec.rank,
      hiddenSize,
      vocabSize,
    );
    tensors.push(a, b);
    const lora = attach(be, frozenLinear(unembed.weight, hiddenSize, vocabSize), a, b, scale).lora;
    unembed = { ...unembed, lora };
  }
  const params: ModelParams = { ...frozen, layers, unembed };
  return { kind: "lora", base, lora: spec, tensors, params, step: 0, hasGrad: false };
}
