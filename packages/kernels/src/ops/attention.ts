// Causal grouped-query attention (query head h reads kv head h / (numHeads / numKvHeads)).
// Serving reads keys and values from a paged KV cache (blocks of blockSize token
// slots, a block table per sequence); training runs over packed, unpaged sequences
// delimited by seqStarts. Softmax is fp32 with a running max.
import { loadNative } from "../loader.ts";

export interface AttentionBinding {
  cacheWrite(
    k: Float32Array,
    v: Float32Array,
    nTokens: number,
    slotMapping: Int32Array,
    keyCache: Float32Array,
    valueCache: Float32Array,
    numBlocks: number,
    blockSize: number,
    numKvHeads: number,
    headDim: number,
  ): void;
  pagedAttention(
    q: Float32Array,
    nRows: number,
    rowSeq: Int32Array,
    rowPos: Int32Array,
    blockTables: Int32Array,
    numSeqs: number,
    maxBlocksPerSeq: number,
    keyCache: Float32Array,
    valueCache: Float32Array,
    numBlocks: number,
    blockSize: number,
    numHeads: number,
    numKvHeads: number,
    headDim: number,
    scale: number,
    out: Float32Array,
  ): void;
  attentionForward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    ...rest: [...PackedLayout, out: Float32Array, lse: Float32Array]
  ): void;
  attentionBackward(
    q: Float32Array,
    k: Float32Array,
    v: Float32Array,
    out: Float32Array,
    lse: Float32Array,
    dOut: Float32Array,
    ...rest: [...PackedLayout, dq: Float32Array, dk: Float32Array, dv: Float32Array]
  ): void;
}

/** How the training ops take a packed batch and its heads, in the binding's order. */
type PackedLayout = [
  nTokens: number,
  seqStarts: Int32Array,
  numSeqs: number,
  numHeads: number,
  numKvHeads: number,
  headDim: number,
  scale: number,
];

/** A paged KV cache: token slot block·blockSize + offset holds one [numKvHeads, headDim] row. */
export interface PagedKvCache {
  keyCache: Float32Array; // [numBlocks, blockSize, numKvHeads, headDim]
  valueCache: Float32Array; // [numBlocks, blockSize, numKvHeads, headDim]
  numBlocks: number;
  blockSize: number;
  numKvHeads: number;
  headDim: number;
}

/**
 * A zero-filled cache of the given shape, on huge pages where the system gives
 * them: its blocks are first written as prompts arrive, and on 4 KiB pages
 * those first writes were most of a prefill's cache writes (page faults).
 */
export function createPagedKvCache(
  numBlocks: number,
  blockSize: number,
  numKvHeads: number,
  headDim: number,
): PagedKvCache {
  const length = numBlocks * blockSize * numKvHeads * headDim;
  const native = loadNative();
  const keyCache = new Float32Array(length);
  const valueCache = new Float32Array(length);
  native.adviseHugePages(keyCache);
  native.adviseHugePages(valueCache);
  return {
    keyCache,
    valueCache,
    numBlocks,
    blockSize,
    numKvHeads,
    headDim,
  };
}

/** Which sequence and position each row of a paged-attention batch is, and the block tables. */
export interface PagedRows {
  rowSeq: Int32Array; // [nRows]: the row's sequence
  rowPos: Int32Array; // [nRows]: the row's position in it (it attends to 0..rowPos)
  blockTables: Int32Array; // [numSeqs, maxBlocksPerSeq]: physical block ids (unused entries: any value)
  numSeqs: number;
  maxBlocksPerSeq: number;
}

/**
 * Writes token i's k[i] and v[i] into cache slot slotMapping[i] (= block·blockSize +
 * offset; -1 skips the token). Slots should be distinct: if two tokens name one
 * slot, which of them lands there is unspecified.
 */
export function cacheWrite(
  cache: PagedKvCache,
  k: Float32Array, // [nTokens, numKvHeads, headDim]
  v: Float32Array, // [nTokens, numKvHeads, headDim]
  nTokens: number,
  slotMapping: Int32Array, // [nTokens]
): void {
  const c = cache;
  loadNative().cacheWrite(
    k,
    v,
    nTokens,
    slotMapping,
    c.keyCache,
    c.valueCache,
    c.numBlocks,
    c.blockSize,
    c.numKvHeads,
    c.headDim,
  );
}

/**
 * The unified serving op for a mixed batch of chunked-prefill rows and decode rows:
 * row i (sequence rows.rowSeq[i] at position rows.rowPos[i]) attends causally to
 * that sequence's cached positions 0..rowPos[i], looked up through its block table.
 * Every row's own K/V must already be in the cache (cacheWrite first). A decode row
 * is simply a row whose position is the sequence's last cached one.
 * out is overwritten and must not overlap q or the cache.
 */
export function pagedAttention(
  q: Float32Array, // [nRows, numHeads, headDim]
  nRows: number,
  rows: PagedRows,
  cache: PagedKvCache,
  numHeads: number,
  scale: number,
  out: Float32Array, // [nRows, numHeads, headDim]
): void {
  const c = cache;
  loadNative().pagedAttention(
    q,
    nRows,
    rows.rowSeq,
    rows.rowPos,
    rows.blockTables,
    rows.numSeqs,
    rows.maxBlocksPerSeq,
    c.keyCache,
    c.valueCache,
    c.numBlocks,
    c.blockSize,
    numHeads,
    c.numKvHeads,
    c.headDim,
    scale,
    out,
  );
}

// Decode rows [0, 1, …) and their positions, reused across calls of one batch size.
let decodeSeq = new Int32Array(0);
let decodePos = new Int32Array(0);

/**
 * One decode step: row s is the newest token of sequence s, at position
 * contextLens[s] - 1 (its K/V already written). The same native op as
 * pagedAttention with rowSeq = [0, 1, …] and rowPos = contextLens - 1.
 */
export function attentionDecode(
  q: Float32Array, // [numSeqs, numHeads, headDim]
  contextLens: Int32Array, // [numSeqs]: cached tokens per sequence (≥ 1), including the new one
  blockTables: Int32Array, // [numSeqs, maxBlocksPerSeq]
  maxBlocksPerSeq: number,
  cache: PagedKvCache,
  numHeads: number,
  scale: number,
  out: Float32Array, // [numSeqs, numHeads, headDim]
): void {
  const numSeqs = contextLens.length;
  if (decodeSeq.length !== numSeqs) {
    decodeSeq = Int32Array.from({ length: numSeqs }, (_, s) => s);
    decodePos = new Int32Array(numSeqs);
  }
  for (let s = 0; s < numSeqs; s++) decodePos[s] = (contextLens[s] as number) - 1;
  const rows = { rowSeq: decodeSeq, rowPos: decodePos, blockTables, numSeqs, maxBlocksPerSeq };
  pagedAttention(q, numSeqs, rows, cache, numHeads, scale, out);
}

/** The head layout of a training attention call. */
export interface AttentionHeads {
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  scale: number; // multiplies q·k before the softmax, typically 1 / sqrt(headDim)
}

function packedLayout(nTokens: number, seqStarts: Int32Array, h: AttentionHeads): PackedLayout {
  return [nTokens, seqStarts, seqStarts.length - 1, h.numHeads, h.numKvHeads, h.headDim, h.scale];
}

/**
 * Training forward over packed sequences: seqStarts [numSeqs + 1] (0 first, nTokens
 * last, non-decreasing) delimits them; token i attends to tokens start..i of its
 * own sequence. Overwrites out and lse, the log-sum-exp of each row's scaled
 * scores (kept for attentionBackward).
 */
export function attentionForward(
  q: Float32Array, // [nTokens, numHeads, headDim]
  k: Float32Array, // [nTokens, numKvHeads, headDim]
  v: Float32Array, // [nTokens, numKvHeads, headDim]
  nTokens: number,
  seqStarts: Int32Array, // [numSeqs + 1]
  heads: AttentionHeads,
  out: Float32Array, // [nTokens, numHeads, headDim]
  lse: Float32Array, // [nTokens, numHeads]
): void {
  loadNative().attentionForward(q, k, v, ...packedLayout(nTokens, seqStarts, heads), out, lse);
}

/**
 * Training backward (FlashAttention-2 style: probabilities recomputed from lse) of
 * L = Σ dOut ⊙ out. dq, dk and dv are overwritten, not accumulated; dk and dv sum
 * over the query heads of each kv group.
 */
export function attentionBackward(
  q: Float32Array, // [nTokens, numHeads, headDim]
  k: Float32Array, // [nTokens, numKvHeads, headDim]
  v: Float32Array, // [nTokens, numKvHeads, headDim]
  out: Float32Array, // [nTokens, numHeads, headDim]: from attentionForward
  lse: Float32Array, // [nTokens, numHeads]: from attentionForward
  dOut: Float32Array, // [nTokens, numHeads, headDim]
  nTokens: number,
  seqStarts: Int32Array, // [numSeqs + 1]
  heads: AttentionHeads,
  dq: Float32Array, // [nTokens, numHeads, headDim]
  dk: Float32Array, // [nTokens, numKvHeads, headDim]
  dv: Float32Array, // [nTokens, numKvHeads, headDim]
): void {
  loadNative().attentionBackward(
    q,
    k,
    v,
    out,
    lse,
    dOut,
    ...packedLayout(nTokens, seqStarts, heads),
    dq,
    dk,
    dv,
  );
}
