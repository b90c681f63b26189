import { loadNative } from "../loader.ts";

/**
 * bfloat16 values held as their bits (the top half of a float32), row-major: how
 * frozen base weights are stored when the engine loads them in bf16.
 */
export type Bf16Array = Uint16Array;

/**
 * A frozen weight in either dtype. linear, linearBackwardInput and embedding take
 * both, so a layer never branches on how its base weights are stored.
 */
export type WeightArray = Float32Array | Bf16Array;

export function isBf16(w: WeightArray): w is Bf16Array {
  return w instanceof Uint16Array;
}

export interface GemmBf16Binding {
  linearBf16(
    x: Float32Array,
    w: Bf16Array,
    y: Float32Array,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate: boolean,
  ): void;
  linearBackwardInputBf16(
    dy: Float32Array,
    w: Bf16Array,
    dx: Float32Array,
    rows: number,
    dIn: number,
    dOut: number,
    accumulate: boolean,
  ): void;
  embeddingBf16(
    ids: Int32Array,
    table: Bf16Array,
    out: Float32Array,
    n: number,
    vocab: number,
    d: number,
  ): void;
}

/**
 * y[rows, dOut] (+)= x[rows, dIn] · w[dOut, dIn]ᵀ with w in bf16, f32 accumulation.
 * Always batch-invariant: a row's result does not depend on the other rows.
 */
export function linearBf16(
  x: Float32Array,
  w: Bf16Array,
  y: Float32Array,
  rows: number,
  dIn: number,
  dOut: number,
  accumulate = false,
): void {
  loadNative().linearBf16(x, w, y, rows, dIn, dOut, accumulate);
}

/** dx[rows, dIn] (+)= dy[rows, dOut] · w[dOut, dIn] with w in bf16, f32 accumulation. */
export function linearBackwardInputBf16(
  dy: Float32Array,
  w: Bf16Array,
  dx: Float32Array,
  rows: number,
  dIn: number,
  dOut: number,
  accumulate = false,
): void {
  loadNative().linearBackwardInputBf16(dy, w, dx, rows, dIn, dOut, accumulate);
}

/** out[n, d] = table[ids[i], :] widened to f32, table [vocab, d] in bf16. */
export function embeddingBf16(
  ids: Int32Array,
  table: Bf16Array,
  out: Float32Array,
  n: number,
  vocab: number,
  d: number,
): void {
  loadNative().embeddingBf16(ids, table, out, n, vocab, d);
}
