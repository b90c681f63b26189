import { loadNative } from "../loader.ts";
import { isBf16, linearBackwardInputBf16, linearBf16, type WeightArray } from "./gemm-bf16.ts";

/**
 * "auto": OpenBLAS when built with it, else the addon's own SIMD kernel; "own",
 * "blas": that one; "rows" (a · bᵀ only): each row of c depends only on the same
 * row of a, whatever m is, so batching requests together never changes one
 * request's numbers.
 */
export type GemmBackend = "auto" | "own" | "blas" | "rows";

/**
 * The native gemm's arguments (c[m, n] = alpha · op(a) · op(b) + beta · c), in its
 * order; the reference (reference/gemm.ts) takes the same over any numbers.
 */
export type GemmArgs<V = Float32Array> = [
  transA: boolean,
  transB: boolean,
  m: number,
  n: number,
  k: number,
  alpha: number,
  a: V,
  b: V,
  beta: number,
  c: V,
];

export interface GemmBinding {
  gemm(...args: [...GemmArgs, backend: GemmBackend]): void;
  /** The panel width and element count of W [n, k] packed on this process's path (bf16: a bf16 weight). */
  packedLayout(n: number, k: number, bf16: boolean): { nr: number; length: number };
  packWeight<W extends WeightArray>(w: W, n: number, k: number, nr: number, out: W): void;
  linearPacked(
    x: Float32Array,
    packed: WeightArray,
    y: Float32Array,
    rows: number,
    dOut: number,
    dIn: number,
    nr: number,
    accumulate: boolean,
  ): void;
}

export interface GemmOptions {
  transA?: boolean;
  transB?: boolean;
  alpha?: number;
  beta?: number;
  backend?: GemmBackend;
}

/**
 * c[m, n] = alpha · op(a) · op(b) + beta · c, row-major; a is [m, k] ([k, m] when
 * transA), b is [k, n] ([n, k] when transB).
 */
export function gemm(
  m: number,
  n: number,
  k: number,
  a: Float32Array,
  b: Float32Array,
  c: Float32Array,
  o: GemmOptions = {},
) {
  loadNative().gemm(
    o.transA ?? false,
    o.transB ?? false,
    m,
    n,
    k,
    o.alpha ?? 1,
    a,
    b,
    o.beta ?? 0,
    c,
    o.backend ?? "auto",
  );
}

/**
 * A linear layer: y[rows, dOut] (+)= x[rows, dIn] · w[dOut, dIn]ᵀ. A bf16 weight
 * takes the bf16 kernel, which is batch-invariant whatever the backend.
 */
export function linear(
  x: Float32Array,
  w: WeightArray,
  y: Float32Array,
  rows: number,
  dIn: number,
  dOut: number,
  accumulate = false,
  backend: "auto" | "rows" = "auto",
): void {
  if (isBf16(w)) linearBf16(x, w, y, rows, dIn, dOut, accumulate);
  else loadNative().gemm(false, true, rows, dOut, dIn, 1, x, w, accumulate ? 1 : 0, y, backend);
}

/** The linear layer's input gradient: dx[rows, dIn] (+)= dy[rows, dOut] · w[dOut, dIn] (f32 or bf16 w). */
export function linearBackwardInput(
  dy: Float32Array,
  w: WeightArray,
  dx: Float32Array,
  rows: number,
  dIn: number,
  dOut: number,
  accumulate = false,
): void {
  if (isBf16(w)) linearBackwardInputBf16(dy, w, dx, rows, dIn, dOut, accumulate);
  else loadNative().gemm(false, false, rows, dIn, dOut, 1, dy, w, accumulate ? 1 : 0, dx, "auto");
}

/** The linear layer's weight gradient: dw[dOut, dIn] += dy[rows, dOut]ᵀ · x[rows, dIn]. */
export function linearBackwardWeight(
  dy: Float32Array,
  x: Float32Array,
  dw: Float32Array,
  rows: number,
  dIn: number,
  dOut: number,
): void {
  loadNative().gemm(true, false, dOut, dIn, rows, 1, dy, x, 1, dw, "auto");
}

/**
 * A frozen weight [dOut, dIn] (f32 or bf16) packed once into the batch-invariant
 * kernel's panels (of `nr` columns, the instruction set's tile width), so a
 * decode step multiplies by it without repacking it and reads it as long
 * sequential streams. For this process only: another instruction set packs
 * differently. bf16 panels widen exactly as they load, except on the "amx"
 * path, whose tiles take the weight as it is (packedLayout says the size).
 */
export interface PackedWeight {
  readonly dOut: number;
  readonly dIn: number;
  readonly nr: number;
  readonly panels: WeightArray;
}

/** Packs w [dOut, dIn] for linearPacked (a copy in w's dtype: w is left as it is). */
export function packWeight(w: WeightArray, dOut: number, dIn: number): PackedWeight {
  const native = loadNative();
  const { nr, length } = native.packedLayout(dOut, dIn, isBf16(w));
  const panels = isBf16(w) ? new Uint16Array(length) : new Float32Array(length);
  native.packWeight(w, dOut, dIn, nr, panels);
  return { dOut, dIn, nr, panels };
}

/**
 * y[rows, dOut] (+)= x[rows, dIn] · wᵀ over a packed weight, whatever the number
 * of rows the same bits for a row: those of linear(…, "rows") on the unpacked
 * (for bf16: widened) weight, except bf16 on the "amx" path (f32 accuracy, its
 * own bits: src/cpu/gemm_amx.h).
 */
export function linearPacked(
  x: Float32Array,
  w: PackedWeight,
  y: Float32Array,
  rows: number,
  accumulate = false,
): void {
  loadNative().linearPacked(x, w.panels, y, rows, w.dOut, w.dIn, w.nr, accumulate);
}
