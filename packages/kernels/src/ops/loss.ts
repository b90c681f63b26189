import { loadNative } from "../loader.ts";

/** The native functions of src/cpu/loss_binding.cc (shapes in each wrapper's comment). */
export interface LossBinding {
  logSoftmaxGather(
    logits: Float32Array,
    targets: Int32Array,
    logprobs: Float32Array,
    lse: Float32Array,
    n: number,
    vocab: number,
  ): void;
  logSoftmaxGatherBackward(
    logits: Float32Array,
    targets: Int32Array,
    lse: Float32Array,
    dLogprobs: Float32Array,
    dLogits: Float32Array,
    n: number,
    vocab: number,
  ): void;
  unembedLogprobs(
    hidden: Float32Array,
    w: Float32Array,
    targets: Int32Array,
    logprobs: Float32Array,
    lse: Float32Array,
    ...tiling: Tiling
  ): void;
  unembedLogprobsBackward(
    hidden: Float32Array,
    w: Float32Array,
    targets: Int32Array,
    lse: Float32Array,
    dLogprobs: Float32Array,
    dHidden: Float32Array,
    dW: Float32Array | null,
    ...tiling: Tiling
  ): void;
}

/** How the fused unembedding ops take their sizes and tiles, in the binding's order. */
type Tiling = [n: number, d: number, vocab: number, rowBlock: number, vocabBlock: number];

/**
 * Per-token results: logprobs[i] = log softmax(logits_i)[targets[i]] and
 * lse[i] = log Σ_j exp(logits[i, j]), kept for the backward. The cross-entropy
 * of token i is −logprobs[i].
 */
export interface TokenLogprobs {
  logprobs: Float32Array; // [n]
  lse: Float32Array; // [n]
}

/**
 * The tiles of the fused unembedding ops: logits exist [rowBlock, vocabBlock] at a
 * time. W [vocab, d] is streamed once per row block and the hidden rows once per
 * vocabulary block, so square-ish tiles move the least memory. The defaults
 * (1024 × 4096: 16 MiB of fp32 logits) suit vocabularies of 32k–150k.
 */
export interface UnembedTiles {
  rowBlock?: number;
  vocabBlock?: number;
}

export const DEFAULT_UNEMBED_TILES = { rowBlock: 1024, vocabBlock: 4096 } as const;

/** The sizes and tiles of a fused unembedding call, defaults filled in. */
function tiling(n: number, d: number, vocab: number, tiles: UnembedTiles): Tiling {
  const { rowBlock, vocabBlock } = DEFAULT_UNEMBED_TILES;
  return [n, d, vocab, tiles.rowBlock ?? rowBlock, tiles.vocabBlock ?? vocabBlock];
}

/**
 * Log-softmax with target gather over logits [n, vocab], n = targets.length, rows
 * in parallel. Every target must be in [0, vocab) (a RangeError otherwise).
 */
export function logSoftmaxGather(logits: Float32Array, targets: Int32Array, vocab: number): TokenLogprobs {
  const n = targets.length;
  const out = { logprobs: new Float32Array(n), lse: new Float32Array(n) };
  loadNative().logSoftmaxGather(logits, targets, out.logprobs, out.lse, n, vocab);
  return out;
}

/**
 * The backward of logSoftmaxGather for upstream dLogprobs [n] (= −dLoss/dCE for
 * cross-entropy): dLogits[i, j] = dLogprobs[i] · (1[j = targets[i]] − softmax_ij),
 * written into dLogits [n, vocab] (overwritten; allocated when not given).
 */
export function logSoftmaxGatherBackward(
  logits: Float32Array,
  targets: Int32Array,
  lse: Float32Array,
  dLogprobs: Float32Array,
  vocab: number,
  dLogits: Float32Array = new Float32Array(targets.length * vocab),
): Float32Array {
  loadNative().logSoftmaxGatherBackward(logits, targets, lse, dLogprobs, dLogits, targets.length, vocab);
  return dLogits;
}

/**
 * Token logprobs straight from the last hidden states, for large vocabularies:
 * logits = hidden [n, d] · w [vocab, d]ᵀ (w: the unembedding or the tied embedding
 * table) are computed one [rowBlock, vocabBlock] tile at a time with the GEMM and
 * folded into a running log-sum-exp per row, so the [n, vocab] logits never exist.
 * n = targets.length; every target must be in [0, vocab).
 */
export function unembedLogprobs(
  hidden: Float32Array,
  w: Float32Array,
  targets: Int32Array,
  d: number,
  vocab: number,
  tiles: UnembedTiles = {},
): TokenLogprobs {
  const n = targets.length;
  const out = { logprobs: new Float32Array(n), lse: new Float32Array(n) };
  loadNative().unembedLogprobs(hidden, w, targets, out.logprobs, out.lse, ...tiling(n, d, vocab, tiles));
  return out;
}

/**
 * The backward of unembedLogprobs: recomputes each tile's logits, turns them into
 * dLogits as in logSoftmaxGatherBackward, and accumulates
 * dHidden [n, d] += dLogits · w and (unless dW is null) dW [vocab, d] += dLogitsᵀ · hidden.
 * lse is the forward's; dHidden and dW must not share memory with hidden or w.
 */
export function unembedLogprobsBackward(
  hidden: Float32Array,
  w: Float32Array,
  targets: Int32Array,
  lse: Float32Array,
  dLogprobs: Float32Array,
  dHidden: Float32Array,
  dW: Float32Array | null,
  d: number,
  vocab: number,
  tiles: UnembedTiles = {},
): void {
  const n = targets.length;
  loadNative().unembedLogprobsBackward(
    hidden,
    w,
    targets,
    lse,
    dLogprobs,
    dHidden,
    dW,
    ...tiling(n, d, vocab, tiles),
  );
}
