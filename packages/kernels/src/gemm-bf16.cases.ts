// The bf16-weight kernels' checks as a report, so the test runs them in-process
// and again in a child process with OPENTINKER_KERNELS_ISA forcing each
// instruction set (`node --import tsx src/gemm-bf16.cases.ts` prints the report).
import { pathToFileURL } from "node:url";
import { kernelInfo } from "./index.ts";
import { linear, linearPacked, packWeight } from "./ops/gemm.ts";
import { type Bf16Array, embeddingBf16, linearBackwardInputBf16, linearBf16 } from "./ops/gemm-bf16.ts";
import { randomF32, rng } from "./test-utils.ts";

export interface Bf16Report {
  /** The instruction set the addon ran ("avx2", "avx512" or "amx"). */
  isa: string | undefined;
  /** Per case, the worst |got − f64 reference| beyond the tolerance (≤ 0: within it). */
  accuracy: { name: string; excess: number }[];
  /** Per case, whether rows computed alone are bit-identical to rows computed in a batch. */
  invariant: { name: string; same: boolean }[];
}

/** Random bf16 weights in [-1, 1): the top half of random float32s. */
export function randomBf16(n: number, random: () => number): Bf16Array {
  const bits = new Uint32Array(randomF32(n, random).buffer);
  return Uint16Array.from(bits, (b) => b >>> 16);
}

export function widenBf16(w: Bf16Array): Float32Array {
  return new Float32Array(Uint32Array.from(w, (h) => h << 16).buffer);
}

// f32 accumulation over k terms of magnitude ≤ 1: error grows ~ sqrt(k)·eps.
const tolerance = (k: number) => 2e-6 * Math.max(16, k);

function worstExcess(got: Float32Array, expected: Float64Array, atol: number): number {
  let worst = Number.NEGATIVE_INFINITY;
  for (let i = 0; i < got.length; i++) {
    const excess = Math.abs((got[i] as number) - (expected[i] as number)) - atol;
    worst = Number.isNaN(excess) ? Number.POSITIVE_INFINITY : Math.max(worst, excess);
  }
  return worst;
}

/** y = x·Wᵀ (+ y0) in f64, W widened exactly. */
function refForward(
  x: Float32Array,
  w: Float32Array,
  y0: Float32Array | null,
  m: number,
  k: number,
  n: number,
) {
  const out = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = y0 ? (y0[i * n + j] as number) : 0;
      for (let p = 0; p < k; p++) s += (x[i * k + p] as number) * (w[j * k + p] as number);
      out[i * n + j] = s;
    }
  return out;
}

/** dx = dy·W (+ dx0) in f64. */
function refBackward(
  dy: Float32Array,
  w: Float32Array,
  dx0: Float32Array | null,
  m: number,
  k: number,
  n: number,
) {
  const out = new Float64Array(m * k);
  for (let i = 0; i < m; i++)
    for (let p = 0; p < k; p++) {
      let s = dx0 ? (dx0[i * k + p] as number) : 0;
      for (let j = 0; j < n; j++) s += (dy[i * n + j] as number) * (w[j * k + p] as number);
      out[i * k + p] = s;
    }
  return out;
}

// [rows, dIn, dOut]: odd sizes around every vector width and tile (8, 16, 3 and 4 columns, strips of 16 and 64).
const SHAPES: [number, number, number][] = [
  [1, 1, 1],
  [1, 896, 37],
  [3, 7, 5],
  [5, 17, 9],
  [6, 64, 65],
  [9, 130, 11],
  [13, 257, 67],
  [70, 33, 129],
];

function accuracyCases(): Bf16Report["accuracy"] {
  const random = rng(5);
  const out: Bf16Report["accuracy"] = [];
  for (const [m, k, n] of SHAPES) {
    const x = randomF32(m * k, random);
    const w = randomBf16(n * k, random);
    const wf = widenBf16(w);
    for (const accumulate of [false, true]) {
      const y = randomF32(m * n, random);
      const expected = refForward(x, wf, accumulate ? y : null, m, k, n);
      linearBf16(x, w, y, m, k, n, accumulate);
      out.push({
        name: `forward [${m}, ${k}]·[${n}, ${k}]ᵀ accumulate=${accumulate}`,
        excess: worstExcess(y, expected, tolerance(k)),
      });
      const dy = randomF32(m * n, random);
      const dx = randomF32(m * k, random);
      const expectedDx = refBackward(dy, wf, accumulate ? dx : null, m, k, n);
      linearBackwardInputBf16(dy, w, dx, m, k, n, accumulate);
      out.push({
        name: `backward [${m}, ${n}]·[${n}, ${k}] accumulate=${accumulate}`,
        excess: worstExcess(dx, expectedDx, tolerance(n)),
      });
    }
  }
  const [vocab, d] = [11, 37];
  const table = randomBf16(vocab * d, random);
  const ids = Int32Array.from([3, 0, 10, 3]);
  const rows = new Float32Array(ids.length * d);
  embeddingBf16(ids, table, rows, ids.length, vocab, d);
  const wide = widenBf16(table);
  const expected = Float64Array.from(
    { length: rows.length },
    (_, i) => wide[(ids[Math.floor(i / d)] as number) * d + (i % d)] as number,
  );
  out.push({ name: "embedding rows are the widened table rows", excess: worstExcess(rows, expected, 0) });
  return out;
}

function sameBits(a: Float32Array, b: Float32Array): boolean {
  const x = new Uint32Array(a.buffer, a.byteOffset, a.length);
  const y = new Uint32Array(b.buffer, b.byteOffset, b.length);
  return x.length === y.length && x.every((v, i) => v === y[i]);
}

/** Each row alone, then all rows together, then the first `prefix` rows: the same bits. */
function invarianceCases(): Bf16Report["invariant"] {
  const random = rng(9);
  const out: Bf16Report["invariant"] = [];
  for (const [m, k, n] of [
    [9, 896, 131],
    [70, 83, 67],
    [6, 257, 35],
  ] as [number, number, number][]) {
    const x = randomF32(m * k, random);
    const w = randomBf16(n * k, random);
    const all = new Float32Array(m * n);
    linearBf16(x, w, all, m, k, n);
    const alone = new Float32Array(m * n);
    for (let i = 0; i < m; i++)
      linearBf16(x.subarray(i * k, (i + 1) * k), w, alone.subarray(i * n, (i + 1) * n), 1, k, n);
    const prefix = Math.max(1, m - 3);
    const head = new Float32Array(prefix * n);
    linearBf16(x.subarray(0, prefix * k), w, head, prefix, k, n);
    out.push({
      name: `forward rows of [${m}, ${k}]·[${n}, ${k}]ᵀ`,
      same: sameBits(all, alone) && sameBits(all.subarray(0, prefix * n), head),
    });
    const dy = randomF32(m * n, random);
    const dxAll = new Float32Array(m * k);
    linearBackwardInputBf16(dy, w, dxAll, m, k, n);
    const dxAlone = new Float32Array(m * k);
    for (let i = 0; i < m; i++)
      linearBackwardInputBf16(
        dy.subarray(i * n, (i + 1) * n),
        w,
        dxAlone.subarray(i * k, (i + 1) * k),
        1,
        k,
        n,
      );
    out.push({ name: `backward rows of [${m}, ${n}]·[${n}, ${k}]`, same: sameBits(dxAll, dxAlone) });
  }
  return out;
}

/**
 * A bf16 weight packed once (the sampler's). On the FMA paths: at every number
 * of rows, the bits of the f32 batch-invariant product over the widened weight,
 * overwriting or accumulating. On the "amx" path (its own sums, gemm_amx.h):
 * m rows alone (from row 0 or row 3, so a row lands elsewhere in its tile) are
 * the bits of the same rows in a 300-row product, and that product is within
 * the f32 tolerance of an f64 reference. k past a K
 * block (256) and not a multiple of 32, n with a partial panel on every path.
 */
function packedCases(random: () => number, amx: boolean): Pick<Bf16Report, "accuracy" | "invariant"> {
  const out: Pick<Bf16Report, "accuracy" | "invariant"> = { accuracy: [], invariant: [] };
  for (const [k, n] of [
    [257, 100],
    [700, 37],
    [896, 65],
  ] as [number, number][]) {
    const w = randomBf16(n * k, random);
    const wide = widenBf16(w);
    const packed = packWeight(w, n, k);
    const x = randomF32(300 * k, random);
    for (const accumulate of [false, true]) {
      const start = randomF32(300 * n, random);
      const all = Float32Array.from(start);
      linearPacked(x, packed, all, 300, accumulate);
      if (amx) {
        out.accuracy.push({
          name: `packed bf16 [300, ${k}]·[${n}, ${k}]ᵀ accumulate=${accumulate} (amx)`,
          excess: worstExcess(all, refForward(x, wide, accumulate ? start : null, 300, k, n), tolerance(k)),
        });
      }
      // Rows from 3 on sit elsewhere in their tiles than in the 300-row product.
      for (const [from, m] of [
        [0, 1],
        [0, 2],
        [3, 1],
        [3, 7],
        [0, 13],
        [3, 64],
        [0, 300],
      ] as const) {
        const rows = [from * n, (from + m) * n] as const;
        const xs = x.subarray(from * k, (from + m) * k);
        const expected = Float32Array.from(start.subarray(...rows));
        if (amx) expected.set(all.subarray(...rows));
        else linear(xs, wide, expected, m, k, n, accumulate, "rows");
        const got = Float32Array.from(start.subarray(...rows));
        linearPacked(xs, packed, got, m, accumulate);
        out.invariant.push({
          name: amx
            ? `packed bf16 rows [${from}, ${from + m}) of [300, ${k}]·[${n}, ${k}]ᵀ alone, accumulate=${accumulate} = in the batch (amx)`
            : `packed bf16 [${m}, ${k}]·[${n}, ${k}]ᵀ accumulate=${accumulate} = f32 rows over the widened weight`,
          same: sameBits(got, expected),
        });
      }
    }
  }
  return out;
}

export function bf16KernelReport(): Bf16Report {
  const isa = kernelInfo().isa;
  const packed = packedCases(rng(11), isa === "amx");
  return {
    isa,
    accuracy: [...accuracyCases(), ...packed.accuracy],
    invariant: [...invarianceCases(), ...packed.invariant],
  };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  process.stdout.write(`${JSON.stringify(bf16KernelReport())}\n`);
}
