// Slow, obvious float64 attention: every score, softmax and gradient is written
// out term by term. GQA: query head h reads kv head floor(h / (numHeads / numKvHeads)).
import { at, type Vec } from "./vec.ts";

export interface RefPagedCache {
  keyCache: Float64Array; // [numBlocks, blockSize, numKvHeads, headDim]
  valueCache: Float64Array; // [numBlocks, blockSize, numKvHeads, headDim]
}

/** Copies of the caches with token i's K/V written at slot slotMapping[i] (-1: skipped). */
export function refCacheWrite(
  k: Vec, // [nTokens, numKvHeads, headDim]
  v: Vec, // [nTokens, numKvHeads, headDim]
  nTokens: number,
  slotMapping: Vec, // [nTokens]
  keyCache: Vec,
  valueCache: Vec,
  numKvHeads: number,
  headDim: number,
): RefPagedCache {
  const out = { keyCache: Float64Array.from(keyCache), valueCache: Float64Array.from(valueCache) };
  const row = numKvHeads * headDim;
  for (let i = 0; i < nTokens; i++) {
    const slot = at(slotMapping, i);
    if (slot < 0) continue;
    for (let e = 0; e < row; e++) {
      out.keyCache[slot * row + e] = at(k, i * row + e);
      out.valueCache[slot * row + e] = at(v, i * row + e);
    }
  }
  return out;
}

/** softmax(scores) as a new array, with the log-sum-exp of the scores. */
function softmax(scores: number[]): { p: number[]; lse: number } {
  const max = Math.max(...scores);
  const e = scores.map((s) => Math.exp(s - max));
  const sum = e.reduce((x, y) => x + y, 0);
  return { p: e.map((x) => x / sum), lse: max + Math.log(sum) };
}

/** Σ_e a[aAt + e] · b[bAt + e] over headDim elements. */
function dotAt(a: Vec, aAt: number, b: Vec, bAt: number, headDim: number): number {
  let sum = 0;
  for (let e = 0; e < headDim; e++) sum += at(a, aAt + e) * at(b, bAt + e);
  return sum;
}

/**
 * Paged attention: row i (sequence rowSeq[i], position rowPos[i]) attends to its
 * sequence's cached positions 0..rowPos[i], found through blockTables.
 * Returns out [nRows, numHeads, headDim].
 */
export function refPagedAttention(
  q: Vec, // [nRows, numHeads, headDim]
  nRows: number,
  rowSeq: Vec,
  rowPos: Vec,
  blockTables: Vec, // [numSeqs, maxBlocksPerSeq]
  maxBlocksPerSeq: number,
  keyCache: Vec,
  valueCache: Vec,
  blockSize: number,
  numHeads: number,
  numKvHeads: number,
  headDim: number,
  scale: number,
): Float64Array {
  const out = new Float64Array(nRows * numHeads * headDim);
  const group = numHeads / numKvHeads;
  for (let i = 0; i < nRows; i++) {
    const seq = at(rowSeq, i);
    // Cache offset of each position's kv-head-0 row.
    const rows: number[] = [];
    for (let t = 0; t <= at(rowPos, i); t++) {
      const block = at(blockTables, seq * maxBlocksPerSeq + Math.floor(t / blockSize));
      rows.push((block * blockSize + (t % blockSize)) * numKvHeads * headDim);
    }
    for (let h = 0; h < numHeads; h++) {
      const kvAt = Math.floor(h / group) * headDim;
      const qAt = (i * numHeads + h) * headDim;
      const { p } = softmax(rows.map((r) => scale * dotAt(q, qAt, keyCache, r + kvAt, headDim)));
      for (let t = 0; t < rows.length; t++) {
        for (let e = 0; e < headDim; e++) {
          out[qAt + e] = at(out, qAt + e) + at(p, t) * at(valueCache, at(rows, t) + kvAt + e);
        }
      }
    }
  }
  return out;
}

/** The sequence start of each token, from seqStarts [numSeqs + 1]. */
function startsOf(seqStarts: Vec, nTokens: number): number[] {
  const starts: number[] = [];
  for (let s = 0; s + 1 < seqStarts.length; s++) {
    for (let i = at(seqStarts, s); i < at(seqStarts, s + 1); i++) starts.push(at(seqStarts, s));
  }
  if (starts.length !== nTokens) throw new Error("refAttention: seqStarts does not cover nTokens");
  return starts;
}

export interface RefAttentionShape {
  nTokens: number;
  seqStarts: Vec; // [numSeqs + 1]
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  scale: number;
}

/** One query head of one token in a packed batch, with the softmax of its causal scores. */
interface QueryHead {
  row: number; // i · numHeads + h: its index in lse
  qAt: number; // offset of q[i, h, :]
  keys: number[]; // offsets of k[j, kv, :] (and v[j, kv, :]) for j = start..i
  p: number[]; // softmax of scale · q·k over those keys
  lse: number; // their log-sum-exp
}

/** Calls `each` for every token and query head, attending causally within its own sequence. */
function eachQueryHead(q: Vec, k: Vec, shape: RefAttentionShape, each: (head: QueryHead) => void): void {
  const { nTokens, numHeads, numKvHeads, headDim, scale } = shape;
  const group = numHeads / numKvHeads;
  const starts = startsOf(shape.seqStarts, nTokens);
  for (let i = 0; i < nTokens; i++) {
    for (let h = 0; h < numHeads; h++) {
      const kv = Math.floor(h / group);
      const qAt = (i * numHeads + h) * headDim;
      const keys: number[] = [];
      for (let j = at(starts, i); j <= i; j++) keys.push((j * numKvHeads + kv) * headDim);
      const { p, lse } = softmax(keys.map((kAt) => scale * dotAt(q, qAt, k, kAt, headDim)));
      each({ row: i * numHeads + h, qAt, keys, p, lse });
    }
  }
}

/**
 * Causal attention over packed sequences: token i attends to tokens start..i of
 * its own sequence. Returns out [nTokens, numHeads, headDim] and the log-sum-exp of
 * each row's scaled scores, lse [nTokens, numHeads].
 */
export function refAttentionForward(
  q: Vec, // [nTokens, numHeads, headDim]
  k: Vec, // [nTokens, numKvHeads, headDim]
  v: Vec, // [nTokens, numKvHeads, headDim]
  shape: RefAttentionShape,
): { out: Float64Array; lse: Float64Array } {
  const { nTokens, numHeads, headDim } = shape;
  const out = new Float64Array(nTokens * numHeads * headDim);
  const lse = new Float64Array(nTokens * numHeads);
  eachQueryHead(q, k, shape, ({ row, qAt, keys, p, lse: rowLse }) => {
    lse[row] = rowLse;
    for (let t = 0; t < keys.length; t++) {
      for (let e = 0; e < headDim; e++) out[qAt + e] = at(out, qAt + e) + at(p, t) * at(v, at(keys, t) + e);
    }
  });
  return { out, lse };
}

/**
 * Gradients of L = Σ dOut ⊙ out with respect to q, k and v, through the softmax
 * Jacobian: dP = dOut·Vᵀ, dS = P ⊙ (dP − rowsum(P ⊙ dP)), dQ = scale·dS·K,
 * dK = scale·dSᵀ·Q (summed over the kv group's query heads), dV = Pᵀ·dOut.
 */
export function refAttentionBackward(
  q: Vec,
  k: Vec,
  v: Vec,
  dOut: Vec, // [nTokens, numHeads, headDim]
  shape: RefAttentionShape,
): { dq: Float64Array; dk: Float64Array; dv: Float64Array } {
  const { nTokens, numHeads, numKvHeads, headDim, scale } = shape;
  const dq = new Float64Array(nTokens * numHeads * headDim);
  const dk = new Float64Array(nTokens * numKvHeads * headDim);
  const dv = new Float64Array(nTokens * numKvHeads * headDim);
  eachQueryHead(q, k, shape, ({ qAt, keys, p }) => {
    const dp = keys.map((kAt) => dotAt(dOut, qAt, v, kAt, headDim));
    const pDotDp = p.reduce((sum, pt, t) => sum + pt * at(dp, t), 0);
    for (let t = 0; t < keys.length; t++) {
      const kAt = at(keys, t);
      const ds = at(p, t) * (at(dp, t) - pDotDp);
      for (let e = 0; e < headDim; e++) {
        dq[qAt + e] = at(dq, qAt + e) + scale * ds * at(k, kAt + e);
        dk[kAt + e] = at(dk, kAt + e) + scale * ds * at(q, qAt + e);
        dv[kAt + e] = at(dv, kAt + e) + at(p, t) * at(dOut, qAt + e);
      }
    }
  });
  return { dq, dk, dv };
}
