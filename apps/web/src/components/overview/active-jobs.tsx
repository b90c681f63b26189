"use client";
// The overview's running and queued jobs, refreshed every few seconds.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { isActive, type Job, useAdapterNames } from "../jobs/api.ts";
import { stepsDone, totalSteps } from "../jobs/steps.ts";
import { AdapterLink } from "../shared/links.tsx";
import { When } from "../shared/when.tsx";
import { Card, type Column, QueryTable, StatusBadge } from "../ui.tsx";

/** Running jobs first. */
const ORDER: Record<string, number> = { RUNNING: 0, QUEUED: 1 };

/** The running jobs, then the queued ones. */
const activeFirst = (all: Job[]) =>
  all.filter((j) => isActive(j.status)).sort((a, b) => (ORDER[a.status] ?? 0) - (ORDER[b.status] ?? 0));

function columns(names: ReadonlyMap<string, string>): Column<Job>[] {
  return [
    {
      head: "Job",
      cell: (job) => (
        <Link href={`/jobs/${job.id}`} title={job.id} className="text-blue-700 hover:underline">
          {job.name}
        </Link>
      ),
    },
    { head: "Kind", cell: (job) => job.kind },
    {
      head: "Adapter",
      cell: (job) => <AdapterLink id={job.adapterId} name={names.get(job.adapterId) ?? job.adapterId} />,
    },
    { head: "Status", cell: (job) => <StatusBadge status={job.status} /> },
    { head: "Progress", cell: (job) => stepsDone(job.step, totalSteps(job)), className: "tabular-nums" },
    {
      head: "Since",
      cell: (job) => <When iso={job.startedAt ?? job.createdAt} />,
      className: "whitespace-nowrap",
    },
  ];
}

export function ActiveJobs() {
  const trpc = useTRPC();
  const jobs = useQuery({ ...trpc.jobs.list.queryOptions({}), refetchInterval: 5_000, select: activeFirst });
  const names = useAdapterNames();
  return (
    <Card title="Active jobs">
      <QueryTable
        query={jobs}
        what="jobs"
        empty="No running or queued jobs."
        columns={columns(names)}
        rowKey={(job) => job.id}
      />
    </Card>
  );
}
