"use client";
// The team's jobs, a page at a time, sorted as the URL says (?sort=&dir=&page=,
// so a view can be shared and survives a reload); refreshed while a job on the
// page is still going.
import type { JobListItem, JobSortKey } from "@opentinker/protocol";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { usePathname, useRouter, useSearchParams } from "next/navigation";
import { Suspense } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { duration } from "../shared/format.ts";
import { AdapterLink } from "../shared/links.tsx";
import { When } from "../shared/when.tsx";
import { Button, type Column, Loading, QueryTable, StatusBadge } from "../ui.tsx";
import { isActive } from "./api.ts";
import { failureSummary } from "./job-faults.ts";
import {
  type ListView,
  metricLabel,
  pageCount,
  runTime,
  searchOfView,
  sortedBy,
  viewFromSearch,
} from "./job-list-model.ts";
import { formatNumber } from "./metric-table.ts";
import { stepsDone, totalSteps } from "./steps.ts";

const REFRESH_MS = 5_000;

/** A column's heading as a button that sorts by it (and flips the order when it already does). */
function sortable(
  column: Column<JobListItem>,
  key: JobSortKey,
  view: ListView,
  show: (view: ListView) => void,
): Column<JobListItem> {
  const active = view.sort === key;
  const arrow = active ? (view.direction === "asc" ? " ▲" : " ▼") : "";
  return {
    ...column,
    sort: active ? (view.direction === "asc" ? "ascending" : "descending") : "none",
    headCell: (
      <button
        type="button"
        className="uppercase hover:text-gray-900"
        aria-label={`Sort by ${column.head.toLowerCase()}`}
        onClick={() => show(sortedBy(view, key))}
      >
        {column.head}
        <span aria-hidden="true">{arrow}</span>
      </button>
    ),
  };
}

function columns(view: ListView, show: (view: ListView) => void, now: number): Column<JobListItem>[] {
  return [
    sortable(
      {
        head: "Name",
        cell: (job) => (
          <Link href={`/jobs/${job.id}`} title={job.id} className="text-blue-700 underline">
            {job.name}
          </Link>
        ),
      },
      "name",
      view,
      show,
    ),
    { head: "Kind", cell: (job) => job.kind },
    { head: "Environment", cell: (job) => job.environmentName ?? "—" },
    { head: "Adapter", cell: (job) => <AdapterLink id={job.adapterId} name={job.adapterName} /> },
    sortable(
      {
        head: "Status",
        cell: (job) => (
          <>
            <StatusBadge status={job.status} />
            {job.cancelRequested && isActive(job.status) && (
              <span className="ml-1 text-xs text-gray-500">cancelling</span>
            )}
            {job.status === "QUEUED" && job.waitingFor && (
              <span className="block max-w-xs truncate text-xs text-gray-500" title={job.waitingFor}>
                waiting for a slot
              </span>
            )}
            {failureSummary(job) && (
              <span className="block max-w-xs truncate text-xs text-red-700" title={job.error ?? ""}>
                {failureSummary(job)}
              </span>
            )}
          </>
        ),
      },
      "status",
      view,
      show,
    ),
    {
      head: "Progress",
      cell: (job) => stepsDone(job.step, totalSteps(job)),
      className: "whitespace-nowrap tabular-nums",
    },
    sortable(
      {
        head: "Duration",
        cell: (job) => {
          const ms = runTime(job, now);
          return ms === null ? "—" : duration(ms);
        },
        className: "whitespace-nowrap tabular-nums",
      },
      "duration",
      view,
      show,
    ),
    {
      head: "Metric",
      cell: (job) =>
        job.metric ? (
          <span title={`${job.metric.name} at step ${job.metric.step}`}>
            <span className="text-gray-500">{metricLabel(job.metric.name)}</span>{" "}
            {formatNumber(job.metric.value)}
          </span>
        ) : (
          "—"
        ),
      className: "whitespace-nowrap tabular-nums",
    },
    sortable(
      { head: "Created", cell: (job) => <When iso={job.createdAt} />, className: "text-gray-600" },
      "createdAt",
      view,
      show,
    ),
  ];
}

export function JobList() {
  // The list reads its view from the URL (useSearchParams), which needs a Suspense boundary.
  return (
    <Suspense fallback={<Loading what="jobs" />}>
      <JobTable />
    </Suspense>
  );
}

function JobTable() {
  const trpc = useTRPC();
  const router = useRouter();
  const pathname = usePathname();
  const view = viewFromSearch(useSearchParams());
  const show = (next: ListView) => router.replace(`${pathname}${searchOfView(next)}`, { scroll: false });
  const page = useQuery({
    ...trpc.jobs.page.queryOptions(view),
    // The page shown stays up while the next one loads, so sorting does not flash.
    placeholderData: keepPreviousData,
    refetchInterval: (query) =>
      query.state.data?.jobs.some((job) => isActive(job.status)) ? REFRESH_MS : false,
  });
  const pages = page.data ? pageCount(page.data.total, page.data.pageSize) : 1;

  return (
    <>
      <QueryTable
        query={{ isPending: page.isPending, error: page.error, data: page.data?.jobs }}
        what="jobs"
        empty={
          view.page > 1 ? (
            <>
              No jobs on this page.{" "}
              <Link href={pathname} className="text-blue-700 underline">
                Back to the first
              </Link>
              .
            </>
          ) : (
            <>
              No jobs yet.{" "}
              <Link href="/jobs/new" className="text-blue-700 underline">
                Create one
              </Link>{" "}
              to train an adapter with RL or SFT, or to evaluate it.
            </>
          )
        }
        columns={columns(view, show, Date.now())}
        rowKey={(job) => job.id}
      />
      {page.data && page.data.total > page.data.pageSize && (
        <nav aria-label="Pages of jobs" className="mt-4 flex items-center justify-end gap-3 text-sm">
          <Button
            variant="secondary"
            disabled={view.page <= 1}
            onClick={() => show({ ...view, page: view.page - 1 })}
          >
            Previous
          </Button>
          <span className="tabular-nums text-gray-600">
            Page {view.page} of {pages} · {page.data.total} jobs
          </span>
          <Button
            variant="secondary"
            disabled={view.page >= pages}
            onClick={() => show({ ...view, page: view.page + 1 })}
          >
            Next
          </Button>
        </nav>
      )}
    </>
  );
}
