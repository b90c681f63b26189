import {
  createLoraTable,
  embedding,
  embeddingBackward,
  gemm,
  type LoraAdapterWeights,
  linear,
  loraForward,
} from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { interleavedMs, pairedRatio, progress, round, sideMedian } from "./timing.ts";

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
  // Without a grouped kernel, as PEFT applies several adapters to one batch
  // (`adapter_names`): for each adapter present, gather its rows, two dense
  // products (lora_B(lora_A(x))), scatter-add the result into theirs. The gather
  // and the scatter-add are native row copies (the embedding op and its
  // backward), as torch's indexing and index_add_ are: a JavaScript loop there
  // would charge the baseline for our language, not for its algorithm.
  const groups = Array.from({ length: s.adapters }, (_, slot) => ({
    slot,
    rows: Int32Array.from(rowsOf(slots, slot)),
  })).filter((g) => g.rows.length > 0);
  const xg = new Float32Array(s.n * s.dIn);
  const t = new Float32Array(s.n * RANK);
  const yg = new Float32Array(s.n * s.dOut);
  const naive = () => {
    for (const { slot, rows } of groups) {
      const wt = weights[slot] as LoraAdapterWeights;
      const m = rows.length;
      embedding(rows, x, xg.subarray(0, m * s.dIn), m, s.n, s.dIn);
      gemm(m, RANK, s.dIn, xg.subarray(0, m * s.dIn), wt.a, t.subarray(0, m * RANK), { transB: true });
      gemm(m, s.dOut, RANK, t.subarray(0, m * RANK), wt.b, yg.subarray(0, m * s.dOut), {
        transB: true,
        alpha: wt.scale,
      });
      embeddingBackward(rows, yg.subarray(0, m * s.dOut), y, m, s.n, s.dOut);
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
  // Every side in every round, so each ratio pairs samples taken moments apart.
  const samples = interleavedMs({
    base,
    base_plus_grouped: () => {
      base();
      grouped();
    },
    base_plus_naive: () => {
      base();
      naive();
    },
    grouped,
    naive,
    per_request: perRequest,
  });
  const ms = (side: keyof typeof samples) => round(sideMedian(samples, side));
  const ratio = (a: keyof typeof samples, b: keyof typeof samples) => round(pairedRatio(samples, a, b));
  return {
    phase: s.phase,
    n: s.n,
    d_in: s.dIn,
    d_out: s.dOut,
    rank: RANK,
    adapters: s.adapters,
    rounds: samples.base.length,
    base_ms: ms("base"),
    base_plus_grouped_ms: ms("base_plus_grouped"),
    base_plus_naive_ms: ms("base_plus_naive"),
    grouped_lora_ms: ms("grouped"),
    naive_lora_ms: ms("naive"),
    lora_over_base: ratio("base_plus_grouped", "base"),
    naive_over_grouped: ratio("naive", "grouped"),
    per_request_kernel_ms: ms("per_request"),
    per_request_kernel_over_grouped: ratio("per_request", "grouped"),
  };
}

/** The rows whose slot is `slot`, in order. */
function rowsOf(slots: Int32Array, slot: number): number[] {
  const rows: number[] = [];
  slots.forEach((s, row) => {
    if (s === slot) rows.push(row);
  });
  return rows;
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
