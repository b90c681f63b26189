// The Llama-family transformer over a packed batch of sequences, for training:
// forward records what the backward needs (a tape); backward accumulates the
// gradients of every trainable part. Layers are plain functions over buffers.
import {
  addInPlace,
  attentionBackward,
  attentionForward,
  embedding,
  embeddingBackward,
  rmsNorm,
  rmsNormBackward,
  rope,
  ropeBackward,
  swiglu,
  swigluBackward,
} from "@opentinker/kernels";
import { linearBackward, linearForward } from "./linear.ts";
import type { LayerParams, ModelParams, NormParams } from "./params.ts";
import { type ReferenceKl, unembedBackward, unembedForward } from "./unembed.ts";
import { type BatchImage, embedImages, embedImagesBackward } from "./vision.ts";

/** Sequences packed end to end: token i of the batch, its position, and where each sequence starts. */
export interface PackedBatch {
  tokens: Int32Array; // [T]
  positions: Int32Array; // [T]: position within its own sequence
  seqStarts: Int32Array; // [numSeqs + 1]
  targets: Int32Array; // [T]: the next token of each position
  /** Images whose soft tokens replace the token embeddings of their rows; absent for text-only batches. */
  images?: BatchImage[];
}

interface LayerTape {
  input: Float32Array; // [T, H]: residual stream entering the layer
  xn: Float32Array; // [T, H]
  invRms: Float32Array; // [T]
  q: Float32Array; // [T, nH·hd] after RoPE
  k: Float32Array; // [T, nKV·hd] after RoPE
  v: Float32Array; // [T, nKV·hd]
  attn: Float32Array; // [T, nH·hd]
  lse: Float32Array; // [T, nH]
  mid: Float32Array; // [T, H]: residual after attention
  xn2: Float32Array; // [T, H]
  invRms2: Float32Array; // [T]
  gate: Float32Array; // [T, I]
  up: Float32Array; // [T, I]
  act: Float32Array; // [T, I]
}

export interface Tape {
  batch: PackedBatch;
  layers: LayerTape[];
  final: Float32Array; // [T, H]: residual after the last layer
  hidden: Float32Array; // [T, H]: after the final norm
  invRmsFinal: Float32Array; // [T]
  lse: Float32Array; // [T]: unembedding log-sum-exp
}

export interface ForwardResult {
  logprobs: Float32Array; // [T]: log p(targets[i] | tokens[..i])
  tape: Tape;
}

function layerForward(p: LayerParams, m: ModelParams, batch: PackedBatch, input: Float32Array): LayerTape {
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim, rmsNormEps } = m.shape;
  const T = batch.tokens.length;
  const qDim = numHeads * headDim;
  const kvDim = numKvHeads * headDim;
  const t: LayerTape = {
    input,
    xn: new Float32Array(T * H),
    invRms: new Float32Array(T),
    q: new Float32Array(T * qDim),
    k: new Float32Array(T * kvDim),
    v: new Float32Array(T * kvDim),
    attn: new Float32Array(T * qDim),
    lse: new Float32Array(T * numHeads),
    mid: new Float32Array(T * H),
    xn2: new Float32Array(T * H),
    invRms2: new Float32Array(T),
    gate: new Float32Array(T * I),
    up: new Float32Array(T * I),
    act: new Float32Array(T * I),
  };
  rmsNorm(input, p.inputNorm.weight, t.xn, t.invRms, T, H, rmsNormEps);
  linearForward(p.q, t.xn, T, t.q);
  linearForward(p.k, t.xn, T, t.k);
  linearForward(p.v, t.xn, T, t.v);
  rope(t.q, batch.positions, m.rope, T, numHeads, headDim);
  rope(t.k, batch.positions, m.rope, T, numKvHeads, headDim);
  const heads = { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
  attentionForward(t.q, t.k, t.v, T, batch.seqStarts, heads, t.attn, t.lse);
  linearForward(p.o, t.attn, T, t.mid);
  addInPlace(t.mid, input);
  rmsNorm(t.mid, p.postAttentionNorm.weight, t.xn2, t.invRms2, T, H, rmsNormEps);
  linearForward(p.gate, t.xn2, T, t.gate);
  linearForward(p.up, t.xn2, T, t.up);
  swiglu(t.gate, t.up, t.act);
  return t;
}

/** The layer's output: mid + down(act). */
function layerOutput(p: LayerParams, t: LayerTape, T: number, H: number): Float32Array {
  const out = new Float32Array(T * H);
  linearForward(p.down, t.act, T, out);
  addInPlace(out, t.mid);
  return out;
}

/** The layers and the final norm: everything of the tape but the unembedding's. */
function trunk(m: ModelParams, batch: PackedBatch): Omit<Tape, "lse"> {
  const { hiddenSize: H, vocabSize, rmsNormEps } = m.shape;
  const T = batch.tokens.length;
  let h: Float32Array = new Float32Array(T * H);
  embedding(batch.tokens, m.embed.table, h, T, vocabSize, H);
  if (batch.images) embedImages(m.vision, batch.images, h);
  const layers: LayerTape[] = [];
  for (const p of m.layers) {
    const t = layerForward(p, m, batch, h);
    layers.push(t);
    h = layerOutput(p, t, T, H);
  }
  const hidden = new Float32Array(T * H);
  const invRmsFinal = new Float32Array(T);
  rmsNorm(h, m.finalNorm.weight, hidden, invRmsFinal, T, H, rmsNormEps);
  return { batch, layers, final: h, hidden, invRmsFinal };
}

/** Runs the model over a packed batch and returns each target's logprob. */
export function forward(m: ModelParams, batch: PackedBatch): ForwardResult {
  const tape = trunk(m, batch);
  const { logprobs, lse } = unembedForward(m, tape.hidden, batch.targets);
  return { logprobs, tape: { ...tape, lse } };
}

/** The final hidden states alone (after the last norm), for a reference model's distributions. */
export const finalHidden = (m: ModelParams, batch: PackedBatch): Float32Array => trunk(m, batch).hidden;

/**
 * The backward of an RMSNorm of x [T, H] for the upstream gradient dXn: into dx,
 * added when `accumulate` (onto the residual stream's gradient), else written;
 * the norm's weight gradient accumulates when it trains.
 */
function normBackward(
  norm: NormParams,
  m: ModelParams,
  dXn: Float32Array,
  x: Float32Array,
  invRms: Float32Array,
  dx: Float32Array,
  accumulate: boolean,
): void {
  const { hiddenSize: H, rmsNormEps } = m.shape;
  const T = x.length / H;
  rmsNormBackward(dXn, x, norm.weight, invRms, dx, norm.grad ?? null, T, H, rmsNormEps, accumulate);
}

/** dh is dL/d(layer output) on entry and dL/d(layer input) on return (in place). */
function layerBackward(
  p: LayerParams,
  m: ModelParams,
  batch: PackedBatch,
  t: LayerTape,
  dh: Float32Array,
): void {
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim } = m.shape;
  const T = batch.tokens.length;
  // MLP: out = mid + down(swiglu(gate(xn2), up(xn2)))
  const dAct = new Float32Array(T * I);
  linearBackward(p.down, t.act, dh, T, dAct, false);
  const dGate = new Float32Array(T * I);
  const dUp = new Float32Array(T * I);
  swigluBackward(dAct, t.gate, t.up, dGate, dUp);
  const dXn2 = new Float32Array(T * H);
  linearBackward(p.gate, t.xn2, dGate, T, dXn2, false);
  linearBackward(p.up, t.xn2, dUp, T, dXn2, true);
  normBackward(p.postAttentionNorm, m, dXn2, t.mid, t.invRms2, dh, true);
  // Attention: mid = input + o(attn(rope(q(xn)), rope(k(xn)), v(xn)))
  const qDim = numHeads * headDim;
  const kvDim = numKvHeads * headDim;
  const dAttn = new Float32Array(T * qDim);
  linearBackward(p.o, t.attn, dh, T, dAttn, false);
  const dq = new Float32Array(T * qDim);
  const dk = new Float32Array(T * kvDim);
  const dv = new Float32Array(T * kvDim);
  const heads = { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
  attentionBackward(t.q, t.k, t.v, t.attn, t.lse, dAttn, T, batch.seqStarts, heads, dq, dk, dv);
  ropeBackward(dq, batch.positions, m.rope, T, numHeads, headDim);
  ropeBackward(dk, batch.positions, m.rope, T, numKvHeads, headDim);
  const dXn = new Float32Array(T * H);
  linearBackward(p.q, t.xn, dq, T, dXn, false);
  linearBackward(p.k, t.xn, dk, T, dXn, true);
  linearBackward(p.v, t.xn, dv, T, dXn, true);
  normBackward(p.inputNorm, m, dXn, t.input, t.invRms, dh, true);
}

/**
 * Accumulates every trainable part's gradient of L = Σ dLogprobs ⊙ logprobs
 * (+ the reference KL when given; its weighted sum is returned, else 0).
 */
export function backward(
  m: ModelParams,
  tape: Tape,
  dLogprobs: Float32Array,
  referenceKl?: ReferenceKl,
): number {
  const { hiddenSize: H, vocabSize } = m.shape;
  const T = tape.batch.tokens.length;
  const dHidden = new Float32Array(T * H);
  const kl = unembedBackward(m, tape.hidden, tape.batch.targets, tape.lse, dLogprobs, dHidden, referenceKl);
  const dh = new Float32Array(T * H);
  normBackward(m.finalNorm, m, dHidden, tape.final, tape.invRmsFinal, dh, false);
  for (let l = m.layers.length - 1; l >= 0; l--) {
    layerBackward(m.layers[l] as LayerParams, m, tape.batch, tape.layers[l] as LayerTape, dh);
  }
  if (tape.batch.images) embedImagesBackward(m.vision, tape.batch.images, dh);
  if (m.embed.grad) embeddingBackward(tape.batch.tokens, dh, m.embed.grad, T, vocabSize, H);
  return kl;
}
