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

/** dHidden [T, H] += dL/dhidden; the unembedding's own gradients accumulate. */
export function unembedBackward(
  m: ModelParams,
  hidden: Float32Array,
  targets: Int32Array,
  lse: Float32Array,
  dLogprobs: Float32Array,
  dHidden: Float32Array,
): void {
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const lora = m.unembed.lora;
  const weight = m.unembed.weight;
  if (!lora && !isBf16(weight)) {
    unembedLogprobsBackward(hidden, weight, targets, lse, dLogprobs, dHidden, m.unembed.grad ?? null, H, V);
    return;
  }
  for (const [start, end] of blocks(targets.length, rowBlock(V))) {
    const rows = end - start;
    const x = hidden.subarray(start * H, end * H);
    const dx = dHidden.subarray(start * H, end * H);
    const dLogits = logSoftmaxGatherBackward(
      blockLogits(m, hidden, start, end),
      targets.subarray(start, end),
      lse.subarray(start, end),
      dLogprobs.subarray(start, end),
      V,
    );
    linearBackwardInput(dLogits, m.unembed.weight, dx, rows, H, V, true);
    if (m.unembed.grad) linearBackwardWeight(dLogits, x, m.unembed.grad, rows, H, V);
    if (lora) loraBackward(x, dLogits, rows, new Int32Array(rows), lora.table, dx, lora.grads);
  }
}
