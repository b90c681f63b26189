import { spawnSync } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { kernelInfo, machineInfo } from "./index.ts";
import { loadNative } from "./loader.ts";
import {
  gemm,
  linear,
  linearBackwardInput,
  linearBackwardWeight,
  linearPacked,
  packWeight,
} from "./ops/gemm.ts";
import { refGemm } from "./reference/gemm.ts";
import { expectClose, randomF32, rng } from "./test-utils.ts";

// fp32 accumulation over k terms of magnitude ≤ 1: error grows ~ sqrt(k)·eps.
const tolerance = (k: number) => 2e-6 * Math.max(16, k);

const backends = (kernelInfo().blas ? ["own", "blas", "auto"] : ["own", "auto"]) as (
  | "own"
  | "blas"
  | "auto"
)[];

describe("gemm", () => {
  const shapes: [number, number, number][] = [
    [1, 1, 1],
    [1, 896, 37],
    [7, 5, 3],
    [6, 16, 256],
    [13, 33, 300],
    [61, 129, 257],
    [130, 47, 520],
    [3, 3100, 17],
  ];
  for (const backend of backends) {
    for (const [transA, transB] of [
      [false, false],
      [false, true],
      [true, false],
      [true, true],
    ] as const) {
      it(`${backend}: matches the reference for transA=${transA} transB=${transB} on odd shapes`, () => {
        const random = rng(7);
        for (const [m, n, k] of shapes) {
          const a = randomF32(m * k, random);
          const b = randomF32(k * n, random);
          const c = randomF32(m * n, random);
          const expected = refGemm(transA, transB, m, n, k, 0.5, a, b, -1.5, c);
          gemm(m, n, k, a, b, c, { transA, transB, alpha: 0.5, beta: -1.5, backend });
          expectClose(c, expected, tolerance(k), 1e-5);
        }
      });
    }
  }

  // "rows" takes only a · bᵀ; its packed kernel has edges at every MR (6, 12)
  // rows, NR (16, 32) columns and KC (256) steps of k.
  it("rows: matches the reference on odd shapes, K = 1 and N = 1 included", () => {
    const random = rng(5);
    const rowsShapes: [number, number, number][] = [
      ...shapes,
      [1, 1, 513],
      [5, 1, 1],
      [13, 47, 1],
      [12, 32, 256],
      [25, 65, 512],
      [7, 31, 769],
    ];
    for (const [m, n, k] of rowsShapes) {
      for (const [alpha, beta] of [
        [1, 0],
        [1, 1],
        [0.5, -1.5],
      ] as const) {
        const a = randomF32(m * k, random);
        const b = randomF32(n * k, random);
        const c = randomF32(m * n, random);
        const expected = refGemm(false, true, m, n, k, alpha, a, b, beta, c);
        gemm(m, n, k, a, b, c, { transB: true, alpha, beta, backend: "rows" });
        expectClose(c, expected, tolerance(k), 1e-5);
      }
    }
  });

  it("beta 0 overwrites whatever was in c, including NaN", () => {
    const random = rng(3);
    const a = randomF32(5 * 9, random);
    const b = randomF32(9 * 4, random);
    const c = new Float32Array(5 * 4).fill(Number.NaN);
    gemm(5, 4, 9, a, b, c, { backend: "own" });
    expectClose(c, refGemm(false, false, 5, 4, 9, 1, a, b, 0, c), 1e-5);
  });

  it("k = 0 scales c by beta, and empty shapes are no-ops", () => {
    const c = new Float32Array([1, 2, 3, 4]);
    gemm(2, 2, 0, new Float32Array(0), new Float32Array(0), c, { beta: 2, backend: "own" });
    expect(Array.from(c)).toEqual([2, 4, 6, 8]);
    gemm(0, 3, 4, new Float32Array(0), new Float32Array(12), new Float32Array(0));
  });

  it("linear, its input gradient and its weight gradient agree with the reference", () => {
    const random = rng(11);
    const [rows, dIn, dOut] = [9, 70, 33];
    const x = randomF32(rows * dIn, random);
    const w = randomF32(dOut * dIn, random);
    const y = randomF32(rows * dOut, random);
    const expectedY = refGemm(false, true, rows, dOut, dIn, 1, x, w, 1, y);
    linear(x, w, y, rows, dIn, dOut, true);
    expectClose(y, expectedY, tolerance(dIn));

    const dy = randomF32(rows * dOut, random);
    const dx = new Float32Array(rows * dIn);
    linearBackwardInput(dy, w, dx, rows, dIn, dOut);
    expectClose(dx, refGemm(false, false, rows, dIn, dOut, 1, dy, w, 0, dx), tolerance(dOut));

    const dw = randomF32(dOut * dIn, random);
    const expectedDw = refGemm(true, false, dOut, dIn, rows, 1, dy, x, 1, dw);
    linearBackwardWeight(dy, x, dw, rows, dIn, dOut);
    expectClose(dw, expectedDw, tolerance(rows));
  });

  it("rows: each row of x·Wᵀ is bit-identical whether computed alone or in a batch of any size", () => {
    const random = rng(21);
    // k past two K blocks; n with a partial panel on both instruction sets.
    for (const [k, n] of [
      [257, 100],
      [700, 37],
      [1, 20],
    ] as const) {
      const w = randomF32(n * k, random);
      const x = randomF32(300 * k, random);
      const product = (rows: number, backend: "rows" | "auto", accumulate = false) => {
        const y = new Float32Array(rows * n).fill(accumulate ? 0.25 : 0);
        linear(x.subarray(0, rows * k), w, y, rows, k, n, accumulate, backend);
        return y;
      };
      const alone = Array.from({ length: 300 }, (_, i) => {
        const y = new Float32Array(n);
        linear(x.subarray(i * k, (i + 1) * k), w, y, 1, k, n, false, "rows");
        return y;
      });
      // The same weight packed once (what the sampler holds): the same bits at every m.
      const packed = packWeight(w, n, k);
      const overPacked = (rows: number, accumulate = false) => {
        const y = new Float32Array(rows * n).fill(accumulate ? 0.25 : 0);
        linearPacked(x.subarray(0, rows * k), packed, y, rows, accumulate);
        return y;
      };
      for (const rows of [1, 2, 5, 6, 7, 12, 13, 24, 25, 64, 65, 300]) {
        const batch = product(rows, "rows");
        for (const i of [0, rows >> 1, rows - 1])
          expect(batch.subarray(i * n, (i + 1) * n)).toEqual(alone[i]);
        expect(overPacked(rows)).toEqual(batch);
        expectClose(batch, product(rows, "auto"), tolerance(k));
      }
      // Accumulating (beta 1) is as invariant.
      expect(product(1, "rows", true)).toEqual(product(300, "rows", true).subarray(0, n));
      expect(overPacked(1, true)).toEqual(product(1, "rows", true));
      expect(overPacked(300, true)).toEqual(product(300, "rows", true));
    }
    expect(() =>
      gemm(2, 2, 2, new Float32Array(4), new Float32Array(4), new Float32Array(4), { backend: "rows" }),
    ).toThrow(/"rows" takes only a · bᵀ/);
  });

  it("rejects bad input with errors naming the op and the argument", () => {
    const native = loadNative();
    const f = (n: number) => new Float32Array(n);
    expect(() => native.gemm(false, false, 2, 2, 2, 1, f(3), f(4), 0, f(4), "auto")).toThrow(
      new RangeError("gemm: a has length 3, expected 4"),
    );
    expect(() =>
      native.gemm(false, false, 2, 2, 2, 1, f(4), new Float64Array(4) as never, 0, f(4), "auto"),
    ).toThrow(new TypeError("gemm: b must be a Float32Array"));
    expect(() => native.gemm(false, false, 2, 2, 2, Number.NaN, f(4), f(4), 0, f(4), "auto")).toThrow(
      /gemm: alpha must be finite/,
    );
    expect(() => native.gemm(false, false, -1, 2, 2, 1, f(4), f(4), 0, f(4), "auto")).toThrow(RangeError);
    expect(() => native.gemm(false, false, 1.5, 2, 2, 1, f(4), f(4), 0, f(4), "auto")).toThrow(
      /m must be an integer/,
    );
    expect(() => native.gemm(false, false, 2, 2, 2, 1, f(4), f(4), 0, f(4), "gpu" as never)).toThrow(
      /backend/,
    );
    expect(() => Reflect.apply(native.gemm, native, [false, false, 2])).toThrow(
      /gemm: expected 11 arguments/,
    );
  });

  it("a packed weight is refused on the other instruction set's panel width, or with the wrong length", () => {
    const native = loadNative();
    const { packedNr } = kernelInfo();
    const other = packedNr === 16 ? 32 : 16;
    const w = new Float32Array(40 * 3);
    expect(() => native.packWeight(w, 40, 3, other, new Float32Array(48 * 3))).toThrow(
      new RangeError(
        `packWeight: nr must be ${packedNr} (the active instruction set's panel width), got ${other}`,
      ),
    );
    expect(() => native.packWeight(w, 40, 3, packedNr, new Float32Array(40 * 3))).toThrow(
      /packWeight: out has length 120, expected/,
    );
    const packed = packWeight(w, 40, 3);
    expect(packed.panels.length).toBe(Math.ceil(40 / packedNr) * packedNr * 3);
    const y = new Float32Array(40);
    expect(() => native.linearPacked(new Float32Array(3), packed.panels, y, 1, 40, 3, other, false)).toThrow(
      /linearPacked: nr must be \d+ \(the weight was packed for another instruction set\)/,
    );
    expect(() =>
      native.linearPacked(new Float32Array(3), packed.panels, y, 1, 40, 4, packedNr, false),
    ).toThrow(/linearPacked: x has length 3, expected 4/);
  });

  // The AMX path packs bf16 weights in its own tiles: 16 columns, k padded to 32.
  it("packedLayout says each dtype's panel width and length on this path, and packWeight holds to it", () => {
    const native = loadNative();
    const { packedNr, isa } = kernelInfo();
    expect(native.packedLayout(40, 3, false)).toEqual({
      nr: packedNr,
      length: Math.ceil(40 / packedNr) * packedNr * 3,
    });
    const bf16 = native.packedLayout(40, 33, true);
    if (isa === "amx") expect(bf16).toEqual({ nr: 16, length: 48 * 64 });
    else expect(bf16).toEqual({ nr: packedNr, length: Math.ceil(40 / packedNr) * packedNr * 33 });
    const w = new Uint16Array(40 * 33);
    expect(packWeight(w, 40, 33).panels.length).toBe(bf16.length);
    expect(() => native.packWeight(w, 40, 33, bf16.nr, new Uint16Array(bf16.length - 1))).toThrow(
      new RangeError(`packWeight: out has length ${bf16.length - 1}, expected ${bf16.length}`),
    );
    expect(() => native.packedLayout(-1, 3, true)).toThrow(/packedLayout: n/);
    expect(() => Reflect.apply(native.packedLayout, native, [40, 3, "yes"])).toThrow(/packedLayout: bf16/);
  });
});

describe.skipIf(kernelInfo().blas === null)("auto and an OpenBLAS older than the CPU", () => {
  const index = path.join(path.dirname(fileURLToPath(import.meta.url)), "index.ts");
  const hasAvx512 = machineInfo().flags.includes("avx512f");
  /** Whether "auto" gives OpenBLAS's bits or ours for an m > 24 product, with OpenBLAS forced to `core`. */
  function autoUnder(core: string, isa: "avx2" | "avx512") {
    const source = `import * as kernels from ${JSON.stringify(index)};
      kernels.setKernelThreads(1); // one slice, so "auto" and "blas" make the same single call
      const [m, n, k] = [40, 50, 300];
      let seed = 3;
      const random = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648) * 2 - 1;
      const a = Float32Array.from({ length: m * k }, random);
      const b = Float32Array.from({ length: k * n }, random);
      const run = (backend) => { const c = new Float32Array(m * n); kernels.gemm(m, n, k, a, b, c, { backend }); return c.join(","); };
      const auto = run("auto");
      process.stdout.write(JSON.stringify({ core: kernels.kernelInfo().blasCore, own: auto === run("own"), blas: auto === run("blas") }));`;
    const run = spawnSync(process.execPath, ["--import", "tsx", "--input-type=module", "-e", source], {
      encoding: "utf8",
      env: { ...process.env, OPENBLAS_CORETYPE: core, OPENTINKER_KERNELS_ISA: isa },
    });
    expect(run.stderr).toBe("");
    return JSON.parse(run.stdout) as { core: string; own: boolean; blas: boolean };
  }

  it("takes our kernel when OpenBLAS fell back to its SSE3 kernels, and OpenBLAS when it knows the CPU", () => {
    expect(autoUnder("Prescott", "avx2")).toMatchObject({ core: "Prescott", own: true });
    expect(autoUnder("Haswell", "avx2")).toMatchObject({ core: "Haswell", blas: true });
  });

  // Our AVX-512 kernel beats OpenBLAS's AVX2 ones (1.5-1.7× on Zen 5): auto takes
  // OpenBLAS on the AVX-512 path only where its kernels are AVX-512 too.
  it.skipIf(!hasAvx512)("on the AVX-512 path, takes OpenBLAS only with its AVX-512 kernels", () => {
    expect(autoUnder("Haswell", "avx512")).toMatchObject({ core: "Haswell", own: true });
    expect(autoUnder("SkylakeX", "avx512")).toMatchObject({ core: "SkylakeX", blas: true });
  });
});
