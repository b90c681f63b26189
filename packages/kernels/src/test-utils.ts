// Helpers for the kernel tests: seeded random data and closeness checks that
// report the worst element.
import { expect } from "vitest";

/** A small seeded PRNG (mulberry32), so every failure is reproducible. */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Uniform values in [-scale, scale). */
export function randomF32(n: number, random: () => number, scale = 1): Float32Array {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (random() * 2 - 1) * scale;
  return out;
}

/** |actual - expected| ≤ atol + rtol·|expected| elementwise; names the worst index. */
export function expectClose(
  actual: ArrayLike<number>,
  expected: ArrayLike<number>,
  atol: number,
  rtol = 0,
): void {
  expect(actual.length).toBe(expected.length);
  let worst = -1;
  let worstExcess = 0;
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i] as number;
    const e = expected[i] as number;
    const excess = Math.abs(a - e) - (atol + rtol * Math.abs(e));
    if (!(excess <= 0) && (worst < 0 || excess > worstExcess || Number.isNaN(excess))) {
      worst = i;
      worstExcess = excess;
    }
  }
  if (worst >= 0) {
    expect.fail(
      `element ${worst}: got ${actual[worst]}, expected ${expected[worst]} (atol ${atol}, rtol ${rtol}, ${actual.length} elements)`,
    );
  }
}
