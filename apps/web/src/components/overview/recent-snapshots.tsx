"use client";
// The overview's recently published adapters: one row per adapter with its
// latest version (snapshot) and how many it has, so one job's per-step
// versions do not crowd out the rest.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { SupersededBadge } from "../adapters/version-timeline.tsx";
import type { Outputs } from "../shared/api.ts";
import { AdapterLink, JobIdLink } from "../shared/links.tsx";
import { When } from "../shared/when.tsx";
import { Card, type Column, QueryTable } from "../ui.tsx";

type Entry = Outputs["adapters"]["latestVersions"][number];

const COLUMNS: Column<Entry>[] = [
  { head: "Adapter", cell: (e) => <AdapterLink id={e.adapterId} name={e.adapterName} /> },
  {
    head: "Latest",
    cell: (e) => (
      <>
        v{e.latest.version} {e.latest.supersededAt ? <SupersededBadge /> : null}
      </>
    ),
    className: "whitespace-nowrap tabular-nums",
  },
  {
    head: "Versions",
    cell: (e) => (
      <Link href={`/adapters/${e.adapterId}`} className="text-blue-700 hover:underline">
        {e.versions === 1 ? "1 version" : `${e.versions} versions`}
      </Link>
    ),
    className: "whitespace-nowrap tabular-nums",
  },
  { head: "Produced by", cell: (e) => (e.latest.jobId ? <JobIdLink id={e.latest.jobId} /> : "API") },
  { head: "Published", cell: (e) => <When iso={e.lastPublishedAt} />, className: "whitespace-nowrap" },
];

export function RecentSnapshots() {
  const trpc = useTRPC();
  const entries = useQuery({
    ...trpc.adapters.latestVersions.queryOptions({ limit: 10 }),
    refetchInterval: 10_000,
  });
  return (
    <Card title="Recent snapshots">
      <QueryTable
        query={entries}
        what="snapshots"
        empty="No snapshots yet. Training publishes one per saved version."
        columns={COLUMNS}
        rowKey={(e) => e.adapterId}
      />
    </Card>
  );
}
