import { loadNative } from "../loader.ts";

/** An adapter table for the multi-LoRA op: A_g [r_g, dIn], B_g [dOut, r_g], scale s_g. */
export interface LoraTable {
  readonly count: number;
  readonly dIn: number;
  readonly dOut: number;
  readonly ranks: number[];
}

export interface LoraBinding {
  LoraTable: new (
    dIn: number,
    dOut: number,
    as: Float32Array[],
    bs: Float32Array[],
    scales: number[],
  ) => LoraTable;
  // The wrappers' arguments, every one given.
  loraForward(...args: Required<Parameters<typeof loraForward>>): void;
  loraBackward: typeof loraBackward;
}

export interface LoraAdapterWeights {
  a: Float32Array; // [rank, dIn]
  b: Float32Array; // [dOut, rank]
  scale: number; // alpha / rank, typically
}

/**
 * Builds a table once (validated; it keeps its arrays alive) for any number of
 * calls. Ranks may differ per adapter; they are read from a's length.
 */
export function createLoraTable(dIn: number, dOut: number, adapters: LoraAdapterWeights[]): LoraTable {
  const native = loadNative();
  return new native.LoraTable(
    dIn,
    dOut,
    adapters.map((ad) => ad.a),
    adapters.map((ad) => ad.b),
    adapters.map((ad) => ad.scale),
  );
}

/**
 * y[n, dOut] += s_a · (x[i] · A_aᵀ) · B_aᵀ for every row i whose slot a ≥ 0
 * (slot -1: no adapter). Rows of any adapters, prefill or decode, mix freely.
 * rowInvariant: each row's delta is the same however many rows share the call
 * (for a sampler's batches); otherwise large groups go through faster GEMMs.
 */
export function loraForward(
  x: Float32Array,
  n: number,
  slots: Int32Array,
  table: LoraTable,
  y: Float32Array,
  rowInvariant = false,
): void {
  loadNative().loraForward(x, n, slots, table, y, rowInvariant);
}

/**
 * Accumulates dA_a and dB_a into `grads` (a table over gradient buffers with the
 * same ranks) and, when dx is given, adds the LoRA part of the input gradient.
 */
export function loraBackward(
  x: Float32Array,
  dy: Float32Array,
  n: number,
  slots: Int32Array,
  table: LoraTable,
  dx: Float32Array | null,
  grads: LoraTable,
): void {
  loadNative().loraBackward(x, dy, n, slots, table, dx, grads);
}
