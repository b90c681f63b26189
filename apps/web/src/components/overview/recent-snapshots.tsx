"use client";
// The overview's latest published adapter versions (snapshots) of the team.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import { SupersededBadge } from "../adapters/version-timeline.tsx";
import type { Outputs } from "../shared/api.ts";
import { AdapterLink, JobIdLink } from "../shared/links.tsx";
import { When } from "../shared/when.tsx";
import { Card, type Column, QueryTable } from "../ui.tsx";

type Snapshot = Outputs["adapters"]["recentVersions"][number];

const COLUMNS: Column<Snapshot>[] = [
  { head: "Adapter", cell: (s) => <AdapterLink id={s.adapterId} name={s.adapterName} /> },
  {
    head: "Version",
    cell: (s) => (
      <>
        v{s.version} {s.supersededAt ? <SupersededBadge /> : null}
      </>
    ),
    className: "tabular-nums",
  },
  { head: "Step", cell: (s) => s.trainerStep, className: "tabular-nums" },
  { head: "Produced by", cell: (s) => (s.jobId ? <JobIdLink id={s.jobId} /> : "API") },
  { head: "Published", cell: (s) => <When iso={s.createdAt} />, className: "whitespace-nowrap" },
];

export function RecentSnapshots() {
  const trpc = useTRPC();
  const snapshots = useQuery({
    ...trpc.adapters.recentVersions.queryOptions({ limit: 10 }),
    refetchInterval: 10_000,
  });
  return (
    <Card title="Recent snapshots">
      <QueryTable
        query={snapshots}
        what="snapshots"
        empty="No snapshots yet. Training publishes one per saved version."
        columns={COLUMNS}
        rowKey={(s) => s.handle}
      />
    </Card>
  );
}
