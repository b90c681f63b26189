// The last step: token logprobs from the final hidden states. Without an
// unembedding adapter the fused kernel keeps at most a block of logits alive; with
// one (or with a bf16 weight, which the fused kernel does not take), logits of each
// row block are computed, shifted by the adapter, reduced.
import {
  isBf16,
  linear,
  linearBackwardInput,
  linearBackwardWeight,
  logSoftmaxGather,
  logSoftmaxGatherBackward,
  loraBackward,
  loraForward,
  referenceKlRows,
  unembedLogprobs,
  unembedLogprobsBackward,
} from "@opentinker/kernels";
import type { ModelParams } from "./params.ts";

/** Rows per block so that a block's logits stay about 16 MiB. */
const rowBlock = (vocab: number) => Math.max(1, Math.floor((4 << 20) / vocab));

function blocks(n: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let start = 0; start < n; start += size) out.push([start, Math.min(n, start + size)]);
  return out;
}

function blockLogits(m: ModelParams, hidden: Float32Array, start: number, end: number): Float32Array {
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const rows = end - start;
  const x = hidden.subarray(start * H, end * H);
  const logits = new Float32Array(rows * V);
  linear(x, m.unembed.weight, logits, rows, H, V);
  const lora = m.unembed.lora;
  if (lora) loraForward(x, rows, new Int32Array(rows), lora.table, logits);
  return logits;
}

export function unembedForward(
  m: ModelParams,
  hidden: Float32Array, // [T, H]
  targets: Int32Array, // [T]
): { logprobs: Float32Array; lse: Float32Array } {
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const weight = m.unembed.weight;
  if (!m.unembed.lora && !isBf16(weight)) return unembedLogprobs(hidden, weight, targets, H, V);
  const T = targets.length;
  const logprobs = new Float32Array(T);
  const lse = new Float32Array(T);
  for (const [start, end] of blocks(T, rowBlock(V))) {
    const out = logSoftmaxGather(blockLogits(m, hidden, start, end), targets.subarray(start, end), V);
    logprobs.set(out.logprobs, start);
    lse.set(out.lse, start);
  }
  return { logprobs, lse };
}

/**
 * A full-vocabulary KL(π_ref ‖ π) on chosen positions: every token's probability,
 * not only the sampled one's, is held near a reference model's, so the tokens RL
 * never samples cannot drift unchecked. Its gradient on the logits is w·(π − π_ref).
 */
export interface ReferenceKl {
  params: ModelParams; // the reference model (its unembedding is used)
  hidden: Float32Array; // [T, H]: the reference's final hidden states on the same batch
  weights: Float32Array; // [T]: the KL's weight at each position (0: none)
}

/** Adds w·(π − π_ref) into dLogits for rows [start, end); returns Σ w·KL over them. */
function addReferenceKl(
  ref: ReferenceKl,
  start: number,
  end: number,
  logits: Float32Array,
  lse: Float32Array,
  dLogits: Float32Array,
): number {
  const V = ref.params.shape.vocabSize;
  const refLogits = blockLogits(ref.params, ref.hidden, start, end);
  const refLse = logSoftmaxGather(refLogits, new Int32Array(end - start), V).lse;
  const perRow = new Float64Array(end - start);
  const inputs = { logits, lse: lse.subarray(start, end), refLogits, refLse };
  referenceKlRows(inputs, ref.weights.subarray(start, end), V, dLogits, perRow);
  return perRow.reduce((total, kl) => total + kl, 0);
}

/**
 * dHidden [T, H] += dL/dhidden; the unembedding's own gradients accumulate.
 * With `referenceKl`, its KL joins the loss; returns its weighted sum (0 without).
 */
export function unembedBackward(
  m: ModelParams,
  hidden: Float32Array,
  targets: Int32Array,
  lse: Float32Array,
  dLogprobs: Float32Array,
  dHidden: Float32Array,
  referenceKl?: ReferenceKl,
): number {
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const lora = m.unembed.lora;
  const weight = m.unembed.weight;
  if (!lora && !isBf16(weight) && !referenceKl) {
    unembedLogprobsBackward(hidden, weight, targets, lse, dLogprobs, dHidden, m.unembed.grad ?? null, H, V);
    return 0;
  }
  let kl = 0;
  for (const [start, end] of blocks(targets.length, rowBlock(V))) {
    const rows = end - start;
    const x = hidden.subarray(start * H, end * H);
    const dx = dHidden.subarray(start * H, end * H);
    const logits = blockLogits(m, hidden, start, end);
    const dLogits = logSoftmaxGatherBackward(
      logits,
      targets.subarray(start, end),
      lse.subarray(start, end),
      dLogprobs.subarray(start, end),
      V,
    );
    if (referenceKl) kl += addReferenceKl(referenceKl, start, end, logits, lse, dLogits);
    linearBackwardInput(dLogits, m.unembed.weight, dx, rows, H, V, true);
    if (m.unembed.grad) linearBackwardWeight(dLogits, x, m.unembed.grad, rows, H, V);
    if (lora) loraBackward(x, dLogits, rows, new Int32Array(rows), lora.table, dx, lora.grads);
  }
  return kl;
}
