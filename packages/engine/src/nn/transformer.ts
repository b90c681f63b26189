// The Llama-family transformer over a packed batch of sequences, for training:
// forward records what the backward needs (a tape); backward accumulates the
// gradients of every trainable part. Layers are plain functions over the
// params' backend; every activation comes from the step's arena.
import type { Backend, F32, I32 } from "@opentinker/kernels";
import { Arena } from "./arena.ts";
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

/** A packed batch on the device: the step's inputs, uploaded once. */
export interface DeviceBatch {
  T: number;
  tokens: I32;
  positions: I32;
  seqStarts: I32;
  targets: I32;
  images?: BatchImage[];
}

export function uploadBatch(arena: Arena, batch: PackedBatch): DeviceBatch {
  const device: DeviceBatch = {
    T: batch.tokens.length,
    tokens: arena.upload(batch.tokens),
    positions: arena.upload(batch.positions),
    seqStarts: arena.upload(batch.seqStarts),
    targets: arena.upload(batch.targets),
  };
  if (batch.images) device.images = batch.images;
  return device;
}

interface LayerTape {
  input: F32; // [T, H]: residual stream entering the layer
  xn: F32; // [T, H]
  invRms: F32; // [T]
  q: F32; // [T, nH·hd] after RoPE
  k: F32; // [T, nKV·hd] after RoPE
  v: F32; // [T, nKV·hd]
  attn: F32; // [T, nH·hd]
  lse: F32; // [T, nH]
  mid: F32; // [T, H]: residual after attention
  xn2: F32; // [T, H]
  invRms2: F32; // [T]
  gate: F32; // [T, I]
  up: F32; // [T, I]
  act: F32; // [T, I]
}

export interface Tape {
  batch: DeviceBatch;
  arena: Arena;
  layers: LayerTape[];
  final: F32; // [T, H]: residual after the last layer
  hidden: F32; // [T, H]: after the final norm
  invRmsFinal: F32; // [T]
  lse: F32; // [T]: unembedding log-sum-exp
}

export interface ForwardResult {
  logprobs: F32; // [T]: log p(targets[i] | tokens[..i])
  tape: Tape;
}

const headsOf = (m: ModelParams) => {
  const { numHeads, numKvHeads, headDim } = m.shape;
  return { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
};

function layerForward(p: LayerParams, m: ModelParams, batch: DeviceBatch, input: F32, a: Arena): LayerTape {
  const be = m.backend;
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim, rmsNormEps } = m.shape;
  const { T } = batch;
  const qDim = numHeads * headDim;
  const kvDim = numKvHeads * headDim;
  const t: LayerTape = {
    input,
    xn: a.f32(T, H),
    invRms: a.f32(T),
    q: a.f32(T, qDim),
    k: a.f32(T, kvDim),
    v: a.f32(T, kvDim),
    attn: a.f32(T, qDim),
    lse: a.f32(T, numHeads),
    mid: a.f32(T, H),
    xn2: a.f32(T, H),
    invRms2: a.f32(T),
    gate: a.f32(T, I),
    up: a.f32(T, I),
    act: a.f32(T, I),
  };
  be.rmsNorm(input, p.inputNorm.weight, t.xn, t.invRms, T, H, rmsNormEps);
  linearForward(be, p.q, t.xn, T, t.q);
  linearForward(be, p.k, t.xn, T, t.k);
  linearForward(be, p.v, t.xn, T, t.v);
  be.rope(t.q, batch.positions, m.rope, T, numHeads, headDim);
  be.rope(t.k, batch.positions, m.rope, T, numKvHeads, headDim);
  be.attentionForward(t.q, t.k, t.v, T, batch.seqStarts, headsOf(m), t.attn, t.lse);
  linearForward(be, p.o, t.attn, T, t.mid);
  be.addInPlace(t.mid, input);
  be.rmsNorm(t.mid, p.postAttentionNorm.weight, t.xn2, t.invRms2, T, H, rmsNormEps);
  linearForward(be, p.gate, t.xn2, T, t.gate);
  linearForward(be, p.up, t.xn2, T, t.up);
  be.swiglu(t.gate, t.up, t.act);
  return t;
}

/** The layer's output: mid + down(act). */
function layerOutput(be: Backend, p: LayerParams, t: LayerTape, T: number, H: number, a: Arena): F32 {
  const out = a.f32(T, H);
  linearForward(be, p.down, t.act, T, out);
  be.addInPlace(out, t.mid);
  return out;
}

/** The layers and the final norm: everything of the tape but the unembedding's. */
function trunk(m: ModelParams, batch: DeviceBatch, arena: Arena): Omit<Tape, "lse"> {
  const be = m.backend;
  const { hiddenSize: H, vocabSize, rmsNormEps } = m.shape;
  const { T } = batch;
  let h = arena.f32(T, H);
  be.embedding(batch.tokens, m.embed.table, h, T, vocabSize, H);
  if (batch.images) embedImages(be, m.vision, batch.images, h, arena);
  const layers: LayerTape[] = [];
  for (const p of m.layers) {
    const t = layerForward(p, m, batch, h, arena);
    layers.push(t);
    h = layerOutput(be, p, t, T, H, arena);
  }
  const hidden = arena.f32(T, H);
  const invRmsFinal = arena.f32(T);
  be.rmsNorm(h, m.finalNorm.weight, hidden, invRmsFinal, T, H, rmsNormEps);
  return { batch, arena, layers, final: h, hidden, invRmsFinal };
}

/**
 * Runs the model over a packed batch and returns each target's logprob (on the
 * device). Its buffers live in `arena` until the caller releases it.
 */
export function forward(m: ModelParams, batch: PackedBatch, arena: Arena): ForwardResult {
  const tape = trunk(m, uploadBatch(arena, batch), arena);
  const { logprobs, lse } = unembedForward(m, tape.hidden, tape.batch.targets, arena);
  return { logprobs, tape: { ...tape, lse } };
}

/** The final hidden states alone (after the last norm), for a reference model's distributions. */
export const finalHidden = (m: ModelParams, batch: PackedBatch, arena: Arena): F32 =>
  trunk(m, uploadBatch(arena, batch), arena).hidden;

/**
 * The backward of an RMSNorm of x [T, H] for the upstream gradient dXn: into dx,
 * added when `accumulate` (onto the residual stream's gradient), else written;
 * the norm's weight gradient accumulates when it trains.
 */
function normBackward(
  norm: NormParams,
  m: ModelParams,
  dXn: F32,
  x: F32,
  invRms: F32,
  dx: F32,
  accumulate: boolean,
): void {
  const { hiddenSize: H, rmsNormEps } = m.shape;
  const T = x.length / H;
  m.backend.rmsNormBackward(dXn, x, norm.weight, invRms, dx, norm.grad ?? null, T, H, rmsNormEps, accumulate);
}

/**
 * dh is dL/d(layer output) on entry and dL/d(layer input) on return (in place).
 * Its temporaries go back when it returns, so the next layer reuses their memory.
 */
function layerBackward(p: LayerParams, m: ModelParams, tape: Tape, t: LayerTape, dh: F32): void {
  const a = new Arena(m.backend);
  try {
    layerBackwardIn(p, m, tape, t, dh, a);
  } finally {
    a.release();
  }
}

function layerBackwardIn(p: LayerParams, m: ModelParams, tape: Tape, t: LayerTape, dh: F32, a: Arena): void {
  const be = m.backend;
  const { hiddenSize: H, intermediateSize: I, numHeads, numKvHeads, headDim } = m.shape;
  const { T, positions, seqStarts } = tape.batch;
  // MLP: out = mid + down(swiglu(gate(xn2), up(xn2)))
  const dAct = a.f32(T, I);
  linearBackward(be, p.down, t.act, dh, T, dAct, false);
  const dGate = a.f32(T, I);
  const dUp = a.f32(T, I);
  be.swigluBackward(dAct, t.gate, t.up, dGate, dUp);
  const dXn2 = a.f32(T, H);
  linearBackward(be, p.gate, t.xn2, dGate, T, dXn2, false);
  linearBackward(be, p.up, t.xn2, dUp, T, dXn2, true);
  normBackward(p.postAttentionNorm, m, dXn2, t.mid, t.invRms2, dh, true);
  // Attention: mid = input + o(attn(rope(q(xn)), rope(k(xn)), v(xn)))
  const qDim = numHeads * headDim;
  const kvDim = numKvHeads * headDim;
  const dAttn = a.f32(T, qDim);
  linearBackward(be, p.o, t.attn, dh, T, dAttn, false);
  const dq = a.f32(T, qDim);
  const dk = a.f32(T, kvDim);
  const dv = a.f32(T, kvDim);
  be.attentionBackward(t.q, t.k, t.v, t.attn, t.lse, dAttn, T, seqStarts, headsOf(m), dq, dk, dv);
  be.rope(dq, positions, m.rope, T, numHeads, headDim, true);
  be.rope(dk, positions, m.rope, T, numKvHeads, headDim, true);
  const dXn = a.f32(T, H);
  linearBackward(be, p.q, t.xn, dq, T, dXn, false);
  linearBackward(be, p.k, t.xn, dk, T, dXn, true);
  linearBackward(be, p.v, t.xn, dv, T, dXn, true);
  normBackward(p.inputNorm, m, dXn, t.input, t.invRms, dh, true);
}

/**
 * Accumulates every trainable part's gradient of L = Σ dLogprobs ⊙ logprobs
 * (+ the reference KL when given: its per-row values land in referenceKl.perRow).
 */
export function backward(m: ModelParams, tape: Tape, dLogprobs: F32, referenceKl?: ReferenceKl): void {
  const be = m.backend;
  const { hiddenSize: H, vocabSize } = m.shape;
  const { T, targets, tokens } = tape.batch;
  const dHidden = tape.arena.f32(T, H);
  unembedBackward(m, tape.hidden, targets, tape.lse, dLogprobs, dHidden, tape.arena, referenceKl);
  const dh = tape.arena.f32(T, H);
  normBackward(m.finalNorm, m, dHidden, tape.final, tape.invRmsFinal, dh, false);
  for (let l = m.layers.length - 1; l >= 0; l--) {
    layerBackward(m.layers[l] as LayerParams, m, tape, tape.layers[l] as LayerTape, dh);
  }
  if (tape.batch.images) embedImagesBackward(be, m.vision, tape.batch.images, dh, tape.arena);
  if (m.embed.grad) be.embeddingBackward(tokens, dh, m.embed.grad, T, vocabSize, H);
}
