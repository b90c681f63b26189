import { createLoraTable, gemm, type LoraAdapterWeights, linear, loraForward } from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { medianMs, progress, round } from "./timing.ts";

const RANK = 16;

interface Setting {
  phase: "decode" | "prefill";
  n: number;
  dIn: number;
  dOut: number;
  adapters: number;
}

/**
 * Rows per request: a decode request is one row (rows of the G adapters
 * interleave); a prefill request is the contiguous block of one adapter's rows.
 */
function layout(s: Setting): {
  slots: Int32Array;
  requests: { start: number; rows: number; slot: number }[];
} {
  const slots = new Int32Array(s.n);
  const requests: { start: number; rows: number; slot: number }[] = [];
  if (s.phase === "decode") {
    for (let i = 0; i < s.n; i++) {
      slots[i] = i % s.adapters;
      requests.push({ start: i, rows: 1, slot: i % s.adapters });
    }
  } else {
    const per = s.n / s.adapters;
    for (let a = 0; a < s.adapters; a++) {
      slots.fill(a, a * per, (a + 1) * per);
      requests.push({ start: a * per, rows: per, slot: a });
    }
  }
  return { slots, requests };
}

function benchSetting(s: Setting) {
  const random = rng(s.n + s.dOut + s.adapters);
  const x = randomF32(s.n * s.dIn, random);
  const w = randomF32(s.dOut * s.dIn, random, 0.05);
  const y = new Float32Array(s.n * s.dOut);
  const weights: LoraAdapterWeights[] = Array.from({ length: s.adapters }, () => ({
    a: randomF32(RANK * s.dIn, random, 0.05),
    b: randomF32(s.dOut * RANK, random, 0.05),
    scale: 2,
  }));
  const table = createLoraTable(s.dIn, s.dOut, weights);
  const single = weights.map((wt) => createLoraTable(s.dIn, s.dOut, [wt]));
  const { slots, requests } = layout(s);
  const zeros = new Int32Array(s.n);

  const base = () => linear(x, w, y, s.n, s.dIn, s.dOut);
  const grouped = () => loraForward(x, s.n, slots, table, y);
  // Without a grouped kernel, as a framework applies adapters (PEFT's lora_B(lora_A(x))):
  // per request, two dense products over its rows.
  const t = new Float32Array(s.n * RANK);
  const naive = () => {
    for (const r of requests) {
      const wt = weights[r.slot] as LoraAdapterWeights;
      const x0 = x.subarray(r.start * s.dIn, (r.start + r.rows) * s.dIn);
      const y0 = y.subarray(r.start * s.dOut, (r.start + r.rows) * s.dOut);
      const t0 = t.subarray(0, r.rows * RANK);
      gemm(r.rows, RANK, s.dIn, x0, wt.a, t0, { transB: true });
      gemm(r.rows, s.dOut, RANK, t0, wt.b, y0, { transB: true, alpha: wt.scale, beta: 1 });
    }
  };
  // Our own row kernel, still called one request at a time.
  const perRequest = () => {
    for (const r of requests) {
      loraForward(
        x.subarray(r.start * s.dIn, (r.start + r.rows) * s.dIn),
        r.rows,
        zeros.subarray(0, r.rows),
        single[r.slot] as ReturnType<typeof createLoraTable>,
        y.subarray(r.start * s.dOut, (r.start + r.rows) * s.dOut),
      );
    }
  };
  const baseMs = medianMs(base);
  const groupedMs = medianMs(() => {
    base();
    grouped();
  });
  const naiveMs = medianMs(() => {
    base();
    naive();
  });
  const groupedOnly = medianMs(grouped);
  const naiveOnly = medianMs(naive);
  const perRequestOnly = medianMs(perRequest);
  return {
    phase: s.phase,
    n: s.n,
    d_in: s.dIn,
    d_out: s.dOut,
    rank: RANK,
    adapters: s.adapters,
    base_ms: round(baseMs),
    base_plus_grouped_ms: round(groupedMs),
    base_plus_naive_ms: round(naiveMs),
    grouped_lora_ms: round(groupedOnly),
    naive_lora_ms: round(naiveOnly),
    lora_over_base: round(groupedMs / baseMs),
    naive_over_grouped: round(naiveOnly / groupedOnly),
    per_request_kernel_ms: round(perRequestOnly),
    per_request_kernel_over_grouped: round(perRequestOnly / groupedOnly),
  };
}

export function benchMultiLora() {
  const results = [];
  for (const [phase, n] of [
    ["decode", 64],
    ["prefill", 512],
  ] as const) {
    for (const [dIn, dOut] of [
      [896, 896],
      [896, 4864],
    ]) {
      for (const adapters of [1, 8, 32]) {
        progress(`multilora ${phase} n=${n} ${dIn}→${dOut} G=${adapters}`);
        results.push(benchSetting({ phase, n, dIn: dIn as number, dOut: dOut as number, adapters }));
      }
    }
  }
  return results;
}
