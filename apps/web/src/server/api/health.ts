import type { Db } from "@opentinker/db";

export interface HealthReport {
  /** "draining": this process is stopping (SIGTERM) and takes no new work; the others serve. */
  status: "ok" | "error" | "draining";
  database: { status: "ok" | "unreachable"; latencyMs?: number; error?: string };
  workers: { online: number; lastHeartbeatAt: string | null };
}

/** Checks the database with a round trip and reports the workers' liveness. */
export async function checkHealth(db: Db): Promise<HealthReport> {
  const started = performance.now();
  try {
    await db.$queryRaw`SELECT 1`;
    const latencyMs = Math.round((performance.now() - started) * 10) / 10;
    const workers = await db.worker.aggregate({
      where: { status: "ONLINE" },
      _count: { _all: true },
      _max: { heartbeatAt: true },
    });
    return {
      status: "ok",
      database: { status: "ok", latencyMs },
      workers: {
        online: workers._count._all,
        lastHeartbeatAt: workers._max.heartbeatAt?.toISOString() ?? null,
      },
    };
  } catch (error) {
    // One line, no connection string: the first line of the driver's message.
    const reason = (error instanceof Error ? error.message : String(error)).trim().split("\n").pop() ?? "";
    return {
      status: "error",
      database: { status: "unreachable", error: reason },
      workers: { online: 0, lastHeartbeatAt: null },
    };
  }
}
