// A slow, obvious float64 forward of the Llama family, for tests: per-token
// logprobs of one sequence, straight from the definitions (images included, as
// soft tokens from the vision projection).
import type { RopeFrequencies } from "@opentinker/kernels";
import { convertModelWeights, type ModelConfig, type ModelWeights, visionDims } from "../model/index.ts";

type Vec = ArrayLike<number>;

function matVec(w: Vec, x: Vec, dOut: number, dIn: number, bias?: Vec): number[] {
  const out = new Array<number>(dOut).fill(0);
  for (let o = 0; o < dOut; o++) {
    let sum = bias ? (bias[o] as number) : 0;
    for (let i = 0; i < dIn; i++) sum += (w[o * dIn + i] as number) * (x[i] as number);
    out[o] = sum;
  }
  return out;
}

function rmsNorm(x: number[], w: Vec, eps: number): number[] {
  const mean = x.reduce((s, v) => s + v * v, 0) / x.length;
  const inv = 1 / Math.sqrt(mean + eps);
  return x.map((v, i) => v * inv * (w[i] as number));
}

function ropeHead(x: number[], offset: number, headDim: number, pos: number, rope: RopeFrequencies): void {
  const r = rope.invFreq.length;
  for (let k = 0; k < r; k++) {
    const theta = pos * (rope.invFreq[k] as number);
    const c = Math.cos(theta) * rope.attentionScaling;
    const s = Math.sin(theta) * rope.attentionScaling;
    const a = x[offset + k] as number;
    const b = x[offset + k + r] as number;
    x[offset + k] = a * c - b * s;
    x[offset + k + r] = b * c + a * s;
  }
  void headDim;
}

/** An image of the sequence: its patches [numPatches, C·P·P] become the inputs at positions start, start + 1, … */
export interface ReferenceImage {
  start: number;
  patches: ArrayLike<number>;
}

/** Soft token i = patchProj · patch_i + patchBias + posEmbed[i], from the definition. */
function referenceSoftTokens(config: ModelConfig, weights: ModelWeights, image: ReferenceImage): number[][] {
  const vision = weights.vision;
  if (!config.vision || !vision) throw new Error("referenceLogprobs: images given to a text-only model");
  const H = config.hiddenSize;
  const { numPatches, patchDim } = visionDims(config.vision);
  return Array.from({ length: numPatches }, (_, i) => {
    const patch = Array.from({ length: patchDim }, (_, j) => image.patches[i * patchDim + j] as number);
    const proj = matVec(vision.patchProj, patch, H, patchDim, vision.patchBias);
    return proj.map((x, d) => x + (vision.posEmbed[i * H + d] as number));
  });
}

/**
 * log p(targets[t] | inputs[0..t]) for one sequence; images replace the inputs at
 * their positions. bf16 weights are widened (exactly) first.
 */
export function referenceLogprobs(
  config: ModelConfig,
  heldWeights: ModelWeights,
  rope: RopeFrequencies,
  tokens: readonly number[],
  targets: readonly number[],
  images: readonly ReferenceImage[] = [],
): number[] {
  return referenceLogSoftmax(config, heldWeights, rope, tokens, images).map(
    (row, t) => row[targets[t] as number] as number,
  );
}

/** The whole next-token distribution after each input position, log softmax of the logits [T][vocab]. */
export function referenceLogSoftmax(
  config: ModelConfig,
  heldWeights: ModelWeights,
  rope: RopeFrequencies,
  tokens: readonly number[],
  images: readonly ReferenceImage[] = [],
): number[][] {
  const weights = convertModelWeights(config, heldWeights, "f32");
  const {
    hiddenSize: H,
    intermediateSize: I,
    numHeads,
    numKvHeads,
    headDim: hd,
    vocabSize: V,
    rmsNormEps: eps,
  } = config;
  const group = numHeads / numKvHeads;
  let hs = tokens.map((t) => Array.from(weights.embedTokens.subarray(t * H, (t + 1) * H)));
  for (const image of images) {
    referenceSoftTokens(config, weights, image).forEach((soft, i) => {
      if (image.start + i < hs.length) hs[image.start + i] = soft;
    });
  }
  for (const w of weights.layers) {
    const xn = hs.map((h) => rmsNorm(h, w.inputNorm, eps));
    const q = xn.map((x, pos) => {
      const v = matVec(w.qProj, x, numHeads * hd, H, w.qBias);
      for (let h = 0; h < numHeads; h++) ropeHead(v, h * hd, hd, pos, rope);
      return v;
    });
    const k = xn.map((x, pos) => {
      const v = matVec(w.kProj, x, numKvHeads * hd, H, w.kBias);
      for (let h = 0; h < numKvHeads; h++) ropeHead(v, h * hd, hd, pos, rope);
      return v;
    });
    const v = xn.map((x) => matVec(w.vProj, x, numKvHeads * hd, H, w.vBias));
    hs = hs.map((h, t) => {
      const attn = new Array<number>(numHeads * hd).fill(0);
      for (let head = 0; head < numHeads; head++) {
        const kvh = Math.floor(head / group);
        const scores: number[] = [];
        for (let s = 0; s <= t; s++) {
          let dot = 0;
          for (let d = 0; d < hd; d++)
            dot += (q[t]?.[head * hd + d] as number) * (k[s]?.[kvh * hd + d] as number);
          scores.push(dot / Math.sqrt(hd));
        }
        const max = Math.max(...scores);
        const exps = scores.map((x) => Math.exp(x - max));
        const z = exps.reduce((a, b) => a + b, 0);
        for (let s = 0; s <= t; s++) {
          for (let d = 0; d < hd; d++) {
            attn[head * hd + d] =
              (attn[head * hd + d] as number) + ((exps[s] as number) / z) * (v[s]?.[kvh * hd + d] as number);
          }
        }
      }
      const o = matVec(w.oProj, attn, H, numHeads * hd);
      return h.map((x, i) => x + (o[i] as number));
    });
    hs = hs.map((h) => {
      const x = rmsNorm(h, w.postAttentionNorm, eps);
      const g = matVec(w.gateProj, x, I, H);
      const u = matVec(w.upProj, x, I, H);
      const a = g.map((gv, i) => (gv / (1 + Math.exp(-gv))) * (u[i] as number));
      const d = matVec(w.downProj, a, H, I);
      return h.map((xv, i) => xv + (d[i] as number));
    });
  }
  return hs.map((h) => {
    const logits = matVec(weights.lmHead, rmsNorm(h, weights.norm, eps), V, H);
    const max = Math.max(...logits);
    const lse = max + Math.log(logits.reduce((s, l) => s + Math.exp(l - max), 0));
    return logits.map((l) => l - lse);
  });
}
