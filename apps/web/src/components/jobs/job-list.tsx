"use client";
// The team's jobs, newest first; refreshed while any of them is still going.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { Empty, QueryView, StatusBadge, Table, timeAgo } from "../ui.tsx";
import { isActive, useAdapterNames } from "./api.ts";

const REFRESH_MS = 5_000;

export function JobList() {
  const trpc = useTRPC();
  const jobs = useQuery({
    ...trpc.jobs.list.queryOptions({}),
    refetchInterval: (query) => (query.state.data?.some((job) => isActive(job.status)) ? REFRESH_MS : false),
  });
  const adapterNames = useAdapterNames();

  return (
    <QueryView query={jobs} what="jobs">
      {(list) =>
        list.length === 0 ? (
          <Empty>
            No jobs yet.{" "}
            <Link href="/jobs/new" className="text-blue-700 underline">
              Create one
            </Link>{" "}
            to train an adapter with RL or SFT, or to evaluate it.
          </Empty>
        ) : (
          <Table head={["Job", "Kind", "Status", "Adapter", "Step", "Created"]}>
            {list.map((job) => (
              <tr key={job.id}>
                <td className="px-2 py-2">
                  {/* Cut short on phones by CSS only, so the link's name stays the whole id. */}
                  <Link
                    href={`/jobs/${job.id}`}
                    title={job.id}
                    className="block max-w-[7rem] truncate font-mono text-xs text-blue-700 underline sm:max-w-none"
                  >
                    {job.id}
                  </Link>
                </td>
                <td className="px-2 py-2">{job.kind}</td>
                <td className="px-2 py-2">
                  <StatusBadge status={job.status} />
                  {job.cancelRequested && isActive(job.status) && (
                    <span className="ml-1 text-xs text-gray-500">cancelling</span>
                  )}
                </td>
                <td className="px-2 py-2">{adapterNames.get(job.adapterId) ?? job.adapterId}</td>
                <td className="px-2 py-2 tabular-nums">{job.step}</td>
                <td className="px-2 py-2 whitespace-nowrap text-gray-600">{timeAgo(job.createdAt)}</td>
              </tr>
            ))}
          </Table>
        )
      }
    </QueryView>
  );
}
