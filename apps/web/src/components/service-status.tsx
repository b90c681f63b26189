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

  if (state.kind === "loading")
    return (
      <p role="status" aria-busy="true" className="text-sm text-gray-500">
        Checking the service…
      </p>
    );
  if (state.kind === "error")
    return (
      <p role="alert" className="text-sm text-red-700">
        The service did not answer: {state.message}
      </p>
    );
  const { database, workers } = state.health;
  const databaseOk = database.status === "ok";
  return (
    <dl aria-live="polite" className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-2 text-sm">
      <dt className="font-medium text-gray-600">Database</dt>
      <dd className="flex items-center gap-2">
        <Dot ok={databaseOk} />
        {databaseOk ? `reachable (${database.latencyMs} ms)` : `unreachable: ${database.error}`}
      </dd>
      <dt className="font-medium text-gray-600">Workers online</dt>
      <dd className="flex items-center gap-2">
        <Dot ok={workers.online > 0} />
        {workers.online}
        {workers.lastHeartbeatAt
          ? ` (last heartbeat ${new Date(workers.lastHeartbeatAt).toLocaleTimeString()})`
          : ""}
      </dd>
    </dl>
  );
}

function Dot({ ok }: { ok: boolean }) {
  return (
    <span
      aria-hidden="true"
      className={`inline-block size-2 rounded-full ${ok ? "bg-green-500" : "bg-red-500"}`}
    />
  );
}
