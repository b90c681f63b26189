import type { Vec } from "./vec.ts";

export interface RefLoraAdapter {
  a: Vec; // [rank, dIn]
  b: Vec; // [dOut, rank]
  rank: number;
  scale: number;
}

/** y + Σ rows: s · (x_i · Aᵀ) · Bᵀ, one row at a time. */
export function refLoraForward(
  x: Vec,
  n: number,
  dIn: number,
  dOut: number,
  slots: ArrayLike<number>,
  table: RefLoraAdapter[],
  y: Vec,
): Float64Array {
  const out = Float64Array.from(y);
  for (let i = 0; i < n; i++) {
    const slot = slots[i] as number;
    if (slot < 0) continue;
    const ad = table[slot] as RefLoraAdapter;
    const t = new Float64Array(ad.rank);
    for (let q = 0; q < ad.rank; q++) {
      for (let d = 0; d < dIn; d++)
        t[q] = (t[q] as number) + (x[i * dIn + d] as number) * (ad.a[q * dIn + d] as number);
    }
    for (let o = 0; o < dOut; o++) {
      let sum = 0;
      for (let q = 0; q < ad.rank; q++) sum += (t[q] as number) * (ad.b[o * ad.rank + q] as number);
      out[i * dOut + o] = (out[i * dOut + o] as number) + ad.scale * sum;
    }
  }
  return out;
}

export interface RefLoraGrads {
  dx: Float64Array; // [n, dIn]: the LoRA part only
  da: Float64Array[]; // per adapter [rank, dIn]
  db: Float64Array[]; // per adapter [dOut, rank]
}

/** Gradients of L = Σ dy ⊙ LoRA(x) with respect to x, A_a and B_a. */
export function refLoraBackward(
  x: Vec,
  dy: Vec,
  n: number,
  dIn: number,
  dOut: number,
  slots: ArrayLike<number>,
  table: RefLoraAdapter[],
): RefLoraGrads {
  const dx = new Float64Array(n * dIn);
  const da = table.map((ad) => new Float64Array(ad.rank * dIn));
  const db = table.map((ad) => new Float64Array(dOut * ad.rank));
  for (let i = 0; i < n; i++) {
    const slot = slots[i] as number;
    if (slot < 0) continue;
    const ad = table[slot] as RefLoraAdapter;
    const dA = da[slot] as Float64Array;
    const dB = db[slot] as Float64Array;
    const u = new Float64Array(ad.rank); // x·Aᵀ
    const du = new Float64Array(ad.rank); // s·dy·B
    for (let q = 0; q < ad.rank; q++) {
      for (let d = 0; d < dIn; d++)
        u[q] = (u[q] as number) + (x[i * dIn + d] as number) * (ad.a[q * dIn + d] as number);
      for (let o = 0; o < dOut; o++) {
        du[q] =
          (du[q] as number) + ad.scale * (dy[i * dOut + o] as number) * (ad.b[o * ad.rank + q] as number);
      }
    }
    for (let o = 0; o < dOut; o++) {
      for (let q = 0; q < ad.rank; q++) {
        dB[o * ad.rank + q] =
          (dB[o * ad.rank + q] as number) + ad.scale * (dy[i * dOut + o] as number) * (u[q] as number);
      }
    }
    for (let q = 0; q < ad.rank; q++) {
      for (let d = 0; d < dIn; d++) {
        dA[q * dIn + d] = (dA[q * dIn + d] as number) + (du[q] as number) * (x[i * dIn + d] as number);
        dx[i * dIn + d] = (dx[i * dIn + d] as number) + (du[q] as number) * (ad.a[q * dIn + d] as number);
      }
    }
  }
  return { dx, da, db };
}
