// The dtype frozen base weights are held in. bf16 halves the bytes every decode
// step streams; the kernels widen to f32 as they load and accumulate in f32.
// Trainable tensors (adapters, full-parameter masters) are always f32.
import {
  type Bf16Array,
  isBf16,
  readKernelsEnv,
  type WeightArray,
  type WeightDtype,
  type WeightDtypeChoice,
} from "@opentinker/kernels";
import { bf16ToFloats, floatsToBf16 } from "./float-convert.ts";

export type { WeightArray, WeightDtype, WeightDtypeChoice } from "@opentinker/kernels";

/**
 * Without OPENTINKER_WEIGHT_DTYPE: each matrix as its file stores it. A BF16
 * checkpoint (most published ones) loses nothing held in bf16 and streams half
 * the bytes per decode step; an F32 file (the built-in models) stays f32, so its
 * numbers are exactly those of the f32 path.
 */
export const DEFAULT_WEIGHT_DTYPE: WeightDtypeChoice = "stored";

/** OPENTINKER_WEIGHT_DTYPE (validated by the kernels' env module), else the default. */
export function weightDtypeFromEnv(): WeightDtypeChoice {
  return readKernelsEnv().OPENTINKER_WEIGHT_DTYPE ?? DEFAULT_WEIGHT_DTYPE;
}

export function weightDtypeOf(w: WeightArray): WeightDtype {
  return isBf16(w) ? "bf16" : "f32";
}

/** `w` in `dtype`: itself when it already is; f32 → bf16 rounds to nearest even, bf16 → f32 is exact. */
export function weightAs(w: WeightArray, dtype: "bf16"): Bf16Array;
export function weightAs(w: WeightArray, dtype: WeightDtype): WeightArray;
export function weightAs(w: WeightArray, dtype: WeightDtype): WeightArray {
  if (weightDtypeOf(w) === dtype) return w;
  return isBf16(w) ? bf16ToFloats(w) : floatsToBf16(w);
}

/** The values as f32 (the same array when already f32): full-parameter masters and references start here. */
export function widenWeight(w: WeightArray): Float32Array {
  return isBf16(w) ? bf16ToFloats(w) : w;
}

/** The dtype a matrix is held in under `choice`, given the dtype its file stores (e.g. "BF16", "F32"). */
export function heldDtype(choice: WeightDtypeChoice, storedDtype: string): WeightDtype {
  if (choice !== "stored") return choice;
  return storedDtype === "BF16" ? "bf16" : "f32";
}
