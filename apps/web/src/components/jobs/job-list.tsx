"use client";
// The team's jobs, newest first; refreshed while any of them is still going.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { type Column, QueryTable, StatusBadge, timeAgo } from "../ui.tsx";
import { isActive, type Job, useAdapterNames } from "./api.ts";
import { stepsDone, totalSteps } from "./steps.ts";

const REFRESH_MS = 5_000;

function columns(adapterNames: ReadonlyMap<string, string>): Column<Job>[] {
  return [
    {
      head: "Job",
      cell: (job) => (
        // Cut short on phones by CSS only, so the link's name stays the whole id.
        <Link
          href={`/jobs/${job.id}`}
          title={job.id}
          className="block max-w-[7rem] truncate font-mono text-xs text-blue-700 underline sm:max-w-none"
        >
          {job.id}
        </Link>
      ),
    },
    { head: "Kind", cell: (job) => job.kind },
    {
      head: "Status",
      cell: (job) => (
        <>
          <StatusBadge status={job.status} />
          {job.cancelRequested && isActive(job.status) && (
            <span className="ml-1 text-xs text-gray-500">cancelling</span>
          )}
        </>
      ),
    },
    { head: "Adapter", cell: (job) => adapterNames.get(job.adapterId) ?? job.adapterId },
    { head: "Progress", cell: (job) => stepsDone(job.step, totalSteps(job)), className: "tabular-nums" },
    { head: "Created", cell: (job) => timeAgo(job.createdAt), className: "whitespace-nowrap text-gray-600" },
  ];
}

export function JobList() {
  const trpc = useTRPC();
  const jobs = useQuery({
    ...trpc.jobs.list.queryOptions({}),
    refetchInterval: (query) => (query.state.data?.some((job) => isActive(job.status)) ? REFRESH_MS : false),
  });
  const adapterNames = useAdapterNames();

  return (
    <QueryTable
      query={jobs}
      what="jobs"
      empty={
        <>
          No jobs yet.{" "}
          <Link href="/jobs/new" className="text-blue-700 underline">
            Create one
          </Link>{" "}
          to train an adapter with RL or SFT, or to evaluate it.
        </>
      }
      columns={columns(adapterNames)}
      rowKey={(job) => job.id}
    />
  );
}
