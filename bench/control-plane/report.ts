// The bench's readable summary (without --json).
import type { BenchResult } from "./bench.ts";
import type { CpuSnapshot } from "./cpu.ts";
import type { OverheadRun } from "./overhead.ts";

function table(headers: string[], rows: (string | number)[][]): string {
  const cells = [headers, ...rows].map((row) => row.map(String));
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? "").length)));
  const line = (row: string[]) => `| ${row.map((cell, i) => cell.padEnd(widths[i] ?? 0)).join(" | ")} |`;
  return [line(cells[0] ?? []), line(widths.map((w) => "-".repeat(w))), ...cells.slice(1).map(line)].join(
    "\n",
  );
}

const cpu = (c: CpuSnapshot | null) =>
  c ? `${c.web} / ${c.worker} / ${c.postgres} / ${c.bench} / ${c.other}` : "n/a";

function overhead(cp: NonNullable<BenchResult["controlPlane"]>): string[] {
  const rows: (string | number)[][] = [];
  for (const [name, runs] of [
    ["sample", cp.sample],
    ["forwardBackward", cp.forwardBackward],
  ] as const) {
    for (const r of [runs.single, runs.concurrent] as OverheadRun[]) {
      const p = r.phases;
      const phases = p
        ? `${p.webToInsert} → ${p.insertToClaim} → ${p.claimToFinish} → ${p.finishToClient}`
        : "n/a";
      rows.push([
        name,
        r.clients,
        `${r.roundTrip.p50} / ${r.roundTrip.p95}`,
        `${r.engine.p50} / ${r.engine.p95}`,
        `${r.overhead.p50} / ${r.overhead.p95}`,
        r.accept.p50,
        phases,
        cpu(r.cpuMsPerCall),
      ]);
    }
  }
  const headers = [
    "call",
    "clients",
    "round trip",
    "engine",
    "overhead",
    "accept p50",
    "p50: web → queue → run → wake",
    "CPU ms/call: web / worker / pg / bench / other",
  ];
  return [
    "\ncontrol-plane overhead (ms, p50 / p95)",
    table(headers, rows),
    `target: overhead p50 ≤ ${cp.target.overheadP50Ms} ms at 1 client: ${cp.target.met ? "met" : "NOT met"}`,
  ];
}

export function readable(result: BenchResult): string {
  const m = result.machine;
  const parts = [
    `machine: ${m.cpu} × ${m.cores} (${m.flags.join(" ") || "flags unknown"}), OpenBLAS ${m.openblas.system ? "installed" : "absent"}, Node ${m.node}, load average at start ${m.loadAverage}`,
  ];
  if (result.controlPlane) parts.push(...overhead(result.controlPlane));
  if (result.pipelined) {
    const p = result.pipelined;
    parts.push(
      `\npipelined forwardBackward on one adapter (${p.calls} calls): ${p.sequentialMsPerCall} ms per call one at a time, ${p.pipelinedMsPerCall} ms queued back to back (${p.speedup}×)`,
    );
  }
  if (result.dispatch) {
    const rows = Object.values(result.dispatch).map((d) => [
      `${d.library} ${d.version}`,
      d.pickup,
      d.latency.p50,
      d.latency.p95,
      d.latency.n,
    ]);
    parts.push(
      "\nqueue dispatch, commit → handler start (ms)",
      table(["library", "pickup", "p50", "p95", "jobs"], rows),
    );
  }
  for (const [name, t] of Object.entries(result.trace ?? {})) {
    parts.push(
      `\ntrace: ${name}, 1 client, round trip p50 ${t.roundTrip.p50} ms (${t.traced} of ${t.roundTrip.n} calls cut into phases)`,
      t.phasesP50
        ? table(["phase", "p50 (ms)"], Object.entries(t.phasesP50))
        : "no call could be cut into phases",
      `queries per call: web ${t.queriesPerCall.web}, worker ${t.queriesPerCall.worker}`,
      `CPU ms per call (web / worker / pg / bench / other): ${cpu(t.cpuMsPerCall)}`,
    );
  }
  return parts.join("\n");
}
