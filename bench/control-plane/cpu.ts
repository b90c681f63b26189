// CPU time spent by each process of the control plane, and by everything else on
// the machine (to tell a contended run), from Linux's /proc; null elsewhere.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import type { BenchControlPlane } from "./control-plane.ts";
import { round } from "./stats.ts";

/** /proc counts in clock ticks, 100 a second on Linux. */
const MS_PER_TICK = 10;

interface ProcStat {
  ppid: number;
  /** user + system CPU time, ms. */
  cpuMs: number;
  /** The same for its children that have exited (and been waited for), ms. */
  exitedChildrenMs: number;
}

function procStat(pid: number): ProcStat | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat
      .slice(stat.lastIndexOf(")") + 2)
      .split(" ")
      .map(Number);
    // Fields 4 and 14–17 of proc(5): ppid, utime, stime, cutime, cstime.
    const ticks = (i: number) => (fields[i] ?? 0) * MS_PER_TICK;
    return { ppid: fields[1] ?? -1, cpuMs: ticks(11) + ticks(12), exitedChildrenMs: ticks(13) + ticks(14) };
  } catch {
    return null;
  }
}

/** A process's user + system CPU time so far, ms (null where /proc is not). */
export function processCpuMs(pid: number): number | null {
  return procStat(pid)?.cpuMs ?? null;
}

/** Busy CPU time of the whole machine (all cores), ms. */
function machineBusyMs(): number {
  const [, ...ticks] = (readFileSync("/proc/stat", "utf8").split("\n")[0] ?? "").trim().split(/\s+/);
  // user nice system idle iowait irq softirq steal …
  const [user, nice, system, , , irq, softirq, steal] = ticks.map(Number);
  return [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0) * MS_PER_TICK;
}

export interface CpuPids {
  web: number;
  worker: number;
  /** The database server's postmaster, when it runs on this machine. */
  postmaster: number | null;
}

export type CpuSnapshot = Record<"bench" | "web" | "worker" | "postgres" | "other", number>;

function snapshot(pids: CpuPids): CpuSnapshot {
  const cpu = (pid: number) => procStat(pid)?.cpuMs ?? 0;
  let postgres = 0;
  const postmaster = pids.postmaster === null ? null : procStat(pids.postmaster);
  if (postmaster) {
    // Its backends come and go (pools close idle connections): count the exited ones too.
    postgres = postmaster.cpuMs + postmaster.exitedChildrenMs;
    for (const entry of readdirSync("/proc")) {
      const stat = /^\d+$/.test(entry) ? procStat(Number(entry)) : null;
      if (stat && stat.ppid === pids.postmaster) postgres += stat.cpuMs;
    }
  }
  const ours = { bench: cpu(process.pid), web: cpu(pids.web), worker: cpu(pids.worker), postgres };
  const total = machineBusyMs();
  return { ...ours, other: total - ours.bench - ours.web - ours.worker - ours.postgres };
}

/** The postmaster of the control plane's database, when it runs on this machine. */
async function localPostmaster(cp: BenchControlPlane): Promise<number | null> {
  const [row] = await cp.db.$queryRaw<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`;
  const backend = row ? procStat(row.pid) : null;
  if (!backend) return null;
  const cmdline = readFileSync(`/proc/${backend.ppid}/cmdline`, "utf8");
  return cmdline.includes("postgres") ? backend.ppid : null;
}

/**
 * Runs `work` (which makes `calls` calls) and returns with its result the CPU ms
 * per call of each process; `other` is everything else on the machine.
 */
export async function cpuPerCall<T>(
  cp: BenchControlPlane,
  calls: number,
  work: () => Promise<T>,
): Promise<{ result: T; cpuMsPerCall: CpuSnapshot | null }> {
  if (!existsSync("/proc/stat")) return { result: await work(), cpuMsPerCall: null };
  const pids = { ...cp.pids, postmaster: await localPostmaster(cp) };
  const before = snapshot(pids);
  const result = await work();
  const after = snapshot(pids);
  const perCall = (key: keyof CpuSnapshot) => round((after[key] - before[key]) / calls, 1);
  return {
    result,
    cpuMsPerCall: {
      bench: perCall("bench"),
      web: perCall("web"),
      worker: perCall("worker"),
      postgres: perCall("postgres"),
      other: perCall("other"),
    },
  };
}
