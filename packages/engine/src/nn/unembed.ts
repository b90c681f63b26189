// The last step: token logprobs from the final hidden states. Without an
// unembedding adapter the fused kernel keeps at most a block of logits alive; with
// one (or with a bf16 weight, which the fused kernel does not take), logits of each
// row block are computed, shifted by the adapter, reduced.
import type { DeviceBuffer, F32, I32 } from "@opentinker/kernels";
import type { Arena } from "./arena.ts";
import { slotsFor } from "./linear.ts";
import type { ModelParams } from "./params.ts";

/** Rows per block so that a block's logits stay about 16 MiB. */
const rowBlock = (vocab: number) => Math.max(1, Math.floor((4 << 20) / vocab));

function blocks(n: number, size: number): [number, number][] {
  const out: [number, number][] = [];
  for (let start = 0; start < n; start += size) out.push([start, Math.min(n, start + size)]);
  return out;
}

/** Rows [start, end) of a [T, d] buffer. */
const rowsOf = <D extends "f32" | "i32" | "f64">(
  m: ModelParams,
  buffer: DeviceBuffer<D>,
  start: number,
  end: number,
  d = 1,
) => m.backend.view(buffer, start * d, d === 1 ? [end - start] : [end - start, d]);

function blockLogits(m: ModelParams, hidden: F32, start: number, end: number, arena: Arena): F32 {
  const be = m.backend;
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const rows = end - start;
  const x = rowsOf(m, hidden, start, end, H);
  const logits = arena.f32(rows, V);
  be.linear(x, m.unembed.weight, logits, rows, H, V);
  const lora = m.unembed.lora;
  if (lora) be.loraForward(x, rows, slotsFor(be, rows), lora.table, logits);
  return logits;
}

export function unembedForward(
  m: ModelParams,
  hidden: F32, // [T, H]
  targets: I32, // [T]
  arena: Arena,
): { logprobs: F32; lse: F32 } {
  const be = m.backend;
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const weight = m.unembed.weight;
  if (!m.unembed.lora && weight.dtype === "f32") {
    const out = be.unembedLogprobs(hidden, weight as F32, targets, H, V);
    return { logprobs: arena.adopt(out.logprobs), lse: arena.adopt(out.lse) };
  }
  const T = targets.length;
  const logprobs = arena.f32(T);
  const lse = arena.f32(T);
  for (const [start, end] of blocks(T, rowBlock(V))) {
    const logits = blockLogits(m, hidden, start, end, arena);
    const out = be.logSoftmaxGather(logits, rowsOf(m, targets, start, end), V);
    be.copy(rowsOf(m, logprobs, start, end), arena.adopt(out.logprobs));
    be.copy(rowsOf(m, lse, start, end), arena.adopt(out.lse));
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
  hidden: F32; // [T, H]: the reference's final hidden states on the same batch
  weights: F32; // [T]: the KL's weight at each position (0: none)
  /** [T] f64, filled by the backward: w·KL at each position. */
  perRow: DeviceBuffer<"f64">;
}

/** Σ w·KL over a batch's rows, summed in the backward's blocks (the order the metric always had). */
export function referenceKlSum(perRow: Float64Array, vocab: number): number {
  let total = 0;
  for (const [start, end] of blocks(perRow.length, rowBlock(vocab))) {
    total += perRow.subarray(start, end).reduce((sum, kl) => sum + kl, 0);
  }
  return total;
}

/** Adds w·(π − π_ref) into dLogits for rows [start, end) and writes their w·KL into ref.perRow. */
function addReferenceKl(
  ref: ReferenceKl,
  start: number,
  end: number,
  logits: F32,
  lse: F32,
  dLogits: F32,
  arena: Arena,
): void {
  const m = ref.params;
  const be = m.backend;
  const V = m.shape.vocabSize;
  const refLogits = blockLogits(m, ref.hidden, start, end, arena);
  const refLse = arena.adopt(be.logSoftmaxGather(refLogits, slotsFor(be, end - start), V).lse);
  const weights = rowsOf(m, ref.weights, start, end);
  const perRow = be.referenceKl(logits, rowsOf(m, lse, start, end), refLogits, refLse, weights, V, dLogits);
  be.copy(rowsOf(m, ref.perRow, start, end), arena.adopt(perRow));
}

/**
 * dHidden [T, H] += dL/dhidden; the unembedding's own gradients accumulate.
 * With `referenceKl`, its KL joins the loss (its per-row values in referenceKl.perRow).
 */
export function unembedBackward(
  m: ModelParams,
  hidden: F32,
  targets: I32,
  lse: F32,
  dLogprobs: F32,
  dHidden: F32,
  arena: Arena,
  referenceKl?: ReferenceKl,
): void {
  const be = m.backend;
  const { hiddenSize: H, vocabSize: V } = m.shape;
  const lora = m.unembed.lora;
  const weight = m.unembed.weight;
  if (!lora && weight.dtype === "f32" && !referenceKl) {
    be.unembedLogprobsBackward(
      hidden,
      weight as F32,
      targets,
      lse,
      dLogprobs,
      dHidden,
      m.unembed.grad ?? null,
      H,
      V,
    );
    return;
  }
  for (const [start, end] of blocks(targets.length, rowBlock(V))) {
    const rows = end - start;
    const x = rowsOf(m, hidden, start, end, H);
    const dx = rowsOf(m, dHidden, start, end, H);
    const logits = blockLogits(m, hidden, start, end, arena);
    const dLogits = arena.f32(rows, V);
    be.logSoftmaxGatherBackward(
      logits,
      rowsOf(m, targets, start, end),
      rowsOf(m, lse, start, end),
      rowsOf(m, dLogprobs, start, end),
      V,
      dLogits,
    );
    if (referenceKl) addReferenceKl(referenceKl, start, end, logits, lse, dLogits, arena);
    be.linearBackwardInput(dLogits, weight, dx, rows, H, V, true);
    if (m.unembed.grad) be.linearBackwardWeight(dLogits, x, m.unembed.grad, rows, H, V);
    if (lora) be.loraBackward(x, dLogits, rows, slotsFor(be, rows), lora.table, dx, lora.grads);
  }
}
