import { describe, expect, it } from "vitest";
import { gemm, kernelInfo, setKernelThreads } from "./index.ts";
import { refGemm } from "./reference/gemm.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

describe("the thread pool", () => {
  it("a job posted the moment a new pool starts is never lost (no deadlock on a fresh worker)", () => {
    const threads = Math.max(2, kernelInfo().threads);
    const random = rng(1);
    const [m, n, k] = [64, 64, 32];
    const a = randomF32(m * k, random);
    const b = randomF32(k * n, random);
    const c = new Float32Array(m * n);
    for (let i = 0; i < 300; i++) {
      setKernelThreads(threads); // a fresh pool each time
      gemm(m, n, k, a, b, c, { backend: "own" });
    }
    expectClose(c, refGemm(false, false, m, n, k, 1, a, b, 0, c), 1e-4);
  }, 60_000);

  it("results do not depend on the number of threads", () => {
    const random = rng(2);
    const [m, n, k] = [70, 90, 300];
    const a = randomF32(m * k, random);
    const b = randomF32(k * n, random);
    const one = new Float32Array(m * n);
    const many = new Float32Array(m * n);
    setKernelThreads(1);
    gemm(m, n, k, a, b, one, { backend: "own" });
    setKernelThreads(Math.max(2, kernelInfo().threads));
    gemm(m, n, k, a, b, many, { backend: "own" });
    expect(Array.from(many)).toEqual(Array.from(one));
  });

  it("more threads than cores: every op completes with the right result, late workers or not", () => {
    const threads = kernelInfo().threads;
    const random = rng(3);
    const [m, n, k] = [30, 40, 50];
    const a = randomF32(m * k, random);
    const b = randomF32(k * n, random);
    const expected = refGemm(false, false, m, n, k, 1, a, b, 0, new Float32Array(m * n));
    setKernelThreads(4 * Math.max(2, threads)); // workers often not running when a job is posted
    try {
      for (let i = 0; i < 2000; i++) {
        const c = new Float32Array(m * n).fill(Number.NaN);
        gemm(m, n, k, a, b, c, { backend: "own" });
        if (i % 100 === 0 || i === 1999) expectClose(c, expected, 1e-4);
      }
    } finally {
      setKernelThreads(threads);
    }
  }, 60_000);
});
