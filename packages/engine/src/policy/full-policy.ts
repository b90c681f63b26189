import type { BaseModel } from "../base-model.ts";
import {
  EMBED_TOKENS,
  FINAL_NORM,
  LM_HEAD,
  layerTensorName,
  VISION_PATCH_BIAS,
  VISION_PATCH_PROJ,
  VISION_POS_EMBED,
  visionDims,
  type WeightArray,
  widenWeight,
} from "../model/index.ts";
import type { LinearParams } from "../nn/linear.ts";
import type { LayerParams, ModelParams, NormParams, VisionParams } from "../nn/params.ts";
import { modelShape } from "./frozen.ts";
import type { Policy } from "./policy.ts";
import { type TrainableTensor, trainable } from "./tensor.ts";

/**
 * A full-parameter policy: its own copy of every base weight, trained in place.
 * With tied embeddings one tensor serves as both embedding and unembedding, and
 * both paths add to its gradient. A vision-language model's patch projection and
 * position embedding train too.
 */
export function createFullPolicy(base: BaseModel): Policy {
  const c = base.config;
  const w = base.weights;
  const be = base.backend;
  const tensors: TrainableTensor[] = [];
  // Masters are f32 copies, widened from a bf16 base (exactly).
  const own = (name: string, shape: number[], value: WeightArray) => {
    const wide = widenWeight(value);
    const t = trainable(be, name, shape, wide === value ? Float32Array.from(wide) : wide);
    tensors.push(t);
    return t;
  };
  const norm = (t: TrainableTensor): NormParams => ({ weight: t.value, grad: t.grad });
  const lin = (
    layer: number,
    suffix: string,
    weight: WeightArray,
    dIn: number,
    dOut: number,
    bias?: Float32Array,
  ): LinearParams => {
    const wt = own(layerTensorName(layer, `${suffix}.weight`), [dOut, dIn], weight);
    const p: LinearParams = { dIn, dOut, weight: wt.value, weightGrad: wt.grad };
    if (bias) {
      const bt = own(layerTensorName(layer, `${suffix}.bias`), [dOut], bias);
      p.bias = bt.value;
      p.biasGrad = bt.grad;
    }
    return p;
  };
  const H = c.hiddenSize;
  const q = c.numHeads * c.headDim;
  const kv = c.numKvHeads * c.headDim;
  const embed = own(EMBED_TOKENS, [c.vocabSize, H], w.embedTokens);
  const layers: LayerParams[] = w.layers.map((lw, l) => ({
    inputNorm: norm(own(layerTensorName(l, "input_layernorm.weight"), [H], lw.inputNorm)),
    q: lin(l, "self_attn.q_proj", lw.qProj, H, q, lw.qBias),
    k: lin(l, "self_attn.k_proj", lw.kProj, H, kv, lw.kBias),
    v: lin(l, "self_attn.v_proj", lw.vProj, H, kv, lw.vBias),
    o: lin(l, "self_attn.o_proj", lw.oProj, q, H),
    postAttentionNorm: norm(
      own(layerTensorName(l, "post_attention_layernorm.weight"), [H], lw.postAttentionNorm),
    ),
    gate: lin(l, "mlp.gate_proj", lw.gateProj, H, c.intermediateSize),
    up: lin(l, "mlp.up_proj", lw.upProj, H, c.intermediateSize),
    down: lin(l, "mlp.down_proj", lw.downProj, c.intermediateSize, H),
  }));
  const finalNorm = norm(own(FINAL_NORM, [H], w.norm));
  const lmHead = c.tieWordEmbeddings ? embed : own(LM_HEAD, [c.vocabSize, H], w.lmHead);
  const params: ModelParams = {
    backend: be,
    shape: modelShape(c),
    rope: base.rope,
    embed: { table: embed.value, grad: embed.grad },
    layers,
    finalNorm,
    unembed: { weight: lmHead.value, grad: lmHead.grad },
  };
  if (c.vision && w.vision) {
    const { numPatches, patchDim } = visionDims(c.vision);
    const proj = own(VISION_PATCH_PROJ, [H, patchDim], w.vision.patchProj);
    const bias = own(VISION_PATCH_BIAS, [H], w.vision.patchBias);
    const pos = own(VISION_POS_EMBED, [numPatches, H], w.vision.posEmbed);
    const vision: VisionParams = {
      numPatches,
      proj: {
        dIn: patchDim,
        dOut: H,
        weight: proj.value,
        weightGrad: proj.grad,
        bias: bias.value,
        biasGrad: bias.grad,
      },
      posEmbed: { value: pos.value, grad: pos.grad },
    };
    params.vision = vision;
  }
  return { kind: "full", base, tensors, params, step: 0, hasGrad: false };
}
