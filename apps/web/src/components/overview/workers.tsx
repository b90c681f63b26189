"use client";
// The overview's workers: load (placed adapters / capacity), the device each
// computes on, loaded base models and the last heartbeat.
import type { WorkerInfo } from "@opentinker/protocol";
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import { When } from "../shared/when.tsx";
import { Card, QueryList, StatusBadge } from "../ui.tsx";

export function Workers() {
  const trpc = useTRPC();
  const workers = useQuery({ ...trpc.workers.list.queryOptions({}), refetchInterval: 5_000 });
  return (
    <Card title="Workers">
      <QueryList
        query={workers}
        what="workers"
        empty="No worker is online. Jobs wait in the queue until one starts."
      >
        {(list) => (
          <ul className="divide-y divide-gray-100">
            {list.map((w) => (
              <li key={w.id} className="py-3 first:pt-0 last:pb-0">
                <div className="flex flex-wrap items-center justify-between gap-2">
                  <span className="font-mono text-sm break-all">{w.host}</span>
                  <StatusBadge status={w.status} />
                </div>
                <LoadBar host={w.host} placed={w.placedAdapters} capacity={w.capacity} />
                <dl className="mt-2 grid grid-cols-[auto_1fr] gap-x-3 gap-y-1 text-xs text-gray-600">
                  <dt>Device</dt>
                  <dd>{deviceLine(w)}</dd>
                  {w.kvCacheMiB !== null && w.policyPoolMiB !== null ? (
                    <>
                      <dt>Budgets</dt>
                      <dd>
                        K/V cache {w.kvCacheMiB} MiB · policies {w.policyPoolMiB} MiB, per base model
                      </dd>
                    </>
                  ) : null}
                  {w.adapterMemoryMiB !== null ? (
                    <>
                      <dt>Adapters</dt>
                      <dd>
                        {Math.ceil(w.placedAdapterBytes / 2 ** 20)} of {w.adapterMemoryMiB} MiB of training
                        state
                      </dd>
                    </>
                  ) : null}
                  <dt>Models</dt>
                  <dd>
                    <ModelNames names={w.loadedModels} />
                  </dd>
                  <dt>Heartbeat</dt>
                  <dd>
                    <When iso={w.heartbeatAt} />
                  </dd>
                </dl>
              </li>
            ))}
          </ul>
        )}
      </QueryList>
    </Card>
  );
}

/** Model names whole: a row wraps between names, never inside one ("opentinker-" / "vl-tiny"). */
function ModelNames({ names }: { names: readonly string[] }) {
  if (names.length === 0) return <>none loaded</>;
  return (
    <ul className="flex flex-wrap gap-x-1.5 gap-y-1">
      {names.map((name) => (
        <li key={name} className="whitespace-nowrap rounded bg-gray-100 px-1.5">
          {name}
        </li>
      ))}
    </ul>
  );
}

/** Placed adapters against capacity: the browser colours it green, then yellow, then red when full. */
function LoadBar({ host, placed, capacity }: { host: string; placed: number; capacity: number }) {
  return (
    <div className="mt-2 flex items-center gap-3">
      <meter
        aria-label={`Load of ${host}`}
        min={0}
        max={Math.max(capacity, 1)}
        value={placed}
        low={capacity * 0.75}
        high={Math.max(capacity - 0.5, 0)}
        optimum={0}
        className="h-3 min-w-0 flex-1"
      >
        {placed} of {capacity}
      </meter>
      <span className="text-xs tabular-nums text-gray-600">
        {placed} / {capacity} adapters
      </span>
    </div>
  );
}

/** "cpu · AMD EPYC, 2 cores · 23.4 GiB". */
function deviceLine(w: WorkerInfo): string {
  const parts = [w.device, w.deviceDescription];
  if (w.deviceMemoryMiB !== null) parts.push(`${(w.deviceMemoryMiB / 1024).toFixed(1)} GiB`);
  return parts.filter((p) => p !== "").join(" · ");
}
