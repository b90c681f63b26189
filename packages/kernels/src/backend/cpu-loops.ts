// The CPU backend's own loops: the ops that were JavaScript over activations in
// the engine (issue 45), moved here unchanged so their numbers stay the same.

/** out[o] += Σ_r dy[r, o]: the bias gradient, summed row by row in f32. */
export function sumRowsInto(dy: Float32Array, rows: number, d: number, out: Float32Array): void {
  for (let r = 0, i = 0; r < rows; r++) {
    for (let o = 0; o < d; o++, i++) out[o] = (out[o] as number) + (dy[i] as number);
  }
}

export interface KlInputs {
  logits: Float32Array; // [rows, vocab]: the policy's
  lse: Float32Array; // [rows]
  refLogits: Float32Array; // [rows, vocab]: the reference's
  refLse: Float32Array; // [rows]
}

/**
 * For each row r with weight w ≠ 0: KL(q‖p) in f64 (p the policy's, q the
 * reference's softmax); adds w · (p − q) to dLogits and writes w · KL to out[r].
 */
export function referenceKlRows(
  x: KlInputs,
  weights: Float32Array,
  vocab: number,
  dLogits: Float32Array,
  out: Float64Array,
): void {
  for (let r = 0; r < weights.length; r++) {
    const w = weights[r] as number;
    if (w === 0) continue;
    const shift = x.lse[r] as number;
    const refShift = x.refLse[r] as number;
    let kl = 0;
    for (let j = r * vocab; j < (r + 1) * vocab; j++) {
      const logp = (x.logits[j] as number) - shift;
      const logq = (x.refLogits[j] as number) - refShift;
      const q = Math.exp(logq);
      kl += q * (logq - logp);
      dLogits[j] = (dLogits[j] as number) + w * (Math.exp(logp) - q);
    }
    out[r] = w * kl;
  }
}

/** out[i] = source[rows[i]], rows of width d. */
export function gatherRowsInto(source: Float32Array, rows: Int32Array, d: number, out: Float32Array): void {
  for (let i = 0; i < rows.length; i++) {
    const row = rows[i] as number;
    out.set(source.subarray(row * d, (row + 1) * d), i * d);
  }
}

/** target[rows[i]] = source[i], rows of width d. */
export function scatterRowsInto(
  target: Float32Array,
  rows: Int32Array,
  d: number,
  source: Float32Array,
): void {
  for (let i = 0; i < rows.length; i++) {
    target.set(source.subarray(i * d, (i + 1) * d), (rows[i] as number) * d);
  }
}

/** One layer's paged K/V: blocks of blockSize slots of numKvHeads × headDim. */
export interface KvArrays {
  keyCache: Float32Array;
  valueCache: Float32Array;
  blockSize: number;
  numKvHeads: number;
  headDim: number;
}

/** Copy-on-write: the first `tokens` slots of block `from` into block `to`, in every layer given. */
export function copyKvBlocks(
  layers: readonly KvArrays[],
  copies: readonly { from: number; to: number; tokens: number }[],
): void {
  for (const c of copies) {
    for (const layer of layers) {
      const row = layer.numKvHeads * layer.headDim;
      const from = c.from * layer.blockSize * row;
      const to = c.to * layer.blockSize * row;
      layer.keyCache.copyWithin(to, from, from + c.tokens * row);
      layer.valueCache.copyWithin(to, from, from + c.tokens * row);
    }
  }
}
