"use client";

import { useEffect, useState } from "react";

interface Health {
  status: "ok" | "error";
  database: { status: string; latencyMs?: number; error?: string };
  workers: { online: number; lastHeartbeatAt: string | null };
}

type State = { kind: "loading" } | { kind: "error"; message: string } | { kind: "ready"; health: Health };

/** Live service status from GET /api/health, refreshed every few seconds. */
export function ServiceStatus() {
  const [state, setState] = useState<State>({ kind: "loading" });
  useEffect(() => {
    let cancelled = false;
    const load = async () => {
      try {
        const response = await fetch("/api/health", { cache: "no-store" });
        const health = (await response.json()) as Health;
        if (!cancelled) setState({ kind: "ready", health });
      } catch (error) {
        if (!cancelled)
          setState({ kind: "error", message: error instanceof Error ? error.message : String(error) });
      }
    };
    void load();
    const timer = setInterval(load, 5000);
    return () => {
      cancelled = true;
      clearInterval(timer);
    };
  }, []);

  if (state.kind === "loading") return <p aria-busy="true">Checking the service…</p>;
  if (state.kind === "error") return <p className="bad">The service did not answer: {state.message}</p>;
  const { database, workers } = state.health;
  return (
    <dl className="status" aria-live="polite">
      <dt>Database</dt>
      <dd className={database.status === "ok" ? "ok" : "bad"}>
        {database.status === "ok" ? `reachable (${database.latencyMs} ms)` : `unreachable: ${database.error}`}
      </dd>
      <dt>Workers online</dt>
      <dd>
        {workers.online}
        {workers.lastHeartbeatAt
          ? ` (last heartbeat ${new Date(workers.lastHeartbeatAt).toLocaleTimeString()})`
          : ""}
      </dd>
    </dl>
  );
}
