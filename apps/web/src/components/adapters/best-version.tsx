"use client";
// An adapter's "best" version (the snapshot with the best validation metric of
// the job that marked it), as the adapter page, its versions and a job page show it.
import type { BestVersion } from "@opentinker/protocol";
import { useQuery } from "@tanstack/react-query";
import { useEffect } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { formatNumber } from "../jobs/metric-table.ts";

export function BestBadge() {
  return (
    <span
      className="rounded bg-green-100 px-1.5 py-0.5 text-xs font-medium text-green-900"
      title="The version with the best validation metric of the job that marked it; retention never deletes it."
    >
      best
    </span>
  );
}

/** "v12 · val/reward/mean 0.742 at step 149". */
export function BestVersionText({ best }: { best: BestVersion }) {
  return (
    <span data-testid="best-version" className="tabular-nums">
      <span className="font-semibold">v{best.version}</span>{" "}
      <span className="text-gray-600">
        · {best.metric} {formatNumber(best.value)} at step {best.step}
      </span>
    </span>
  );
}

/** While a job validates, how often its page asks whether the best version moved. */
const BEST_POLL_MS = 3_000;

/** A job's best version: the adapter's, while this job is the one that marked it. */
export function JobBestVersion({
  adapterId,
  jobId,
  active,
}: {
  adapterId: string;
  jobId: string;
  active: boolean;
}) {
  const trpc = useTRPC();
  const adapter = useQuery({
    ...trpc.adapters.get.queryOptions({ adapterId }),
    refetchInterval: active ? BEST_POLL_MS : false,
  });
  const { refetch } = adapter;
  // Once more when the job ends: its final validation may have moved it.
  useEffect(() => {
    if (!active) void refetch();
  }, [active, refetch]);
  const best = adapter.data?.best;
  if (!best || best.jobId !== jobId) return <span className="text-gray-500">—</span>;
  return <BestVersionText best={best} />;
}
