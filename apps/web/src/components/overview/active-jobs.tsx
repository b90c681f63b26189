"use client";
// The overview's running and queued jobs, refreshed every few seconds.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { When } from "../shared/when.tsx";
import { Card, Empty, QueryView, StatusBadge, Table } from "../ui.tsx";

type Job = Outputs["jobs"]["list"][number];

const ORDER: Record<string, number> = { RUNNING: 0, QUEUED: 1 };

export function ActiveJobs() {
  const trpc = useTRPC();
  const jobs = useQuery({ ...trpc.jobs.list.queryOptions({}), refetchInterval: 5_000 });
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  const names = new Map(adapters.data?.map((a) => [a.id, a.name]));
  return (
    <Card title="Active jobs">
      <QueryView query={jobs} what="jobs">
        {(all) => {
          const active = all
            .filter((j) => j.status in ORDER)
            .sort((a, b) => (ORDER[a.status] ?? 0) - (ORDER[b.status] ?? 0));
          if (active.length === 0) return <Empty>No running or queued jobs.</Empty>;
          return (
            <Table head={["Job", "Kind", "Adapter", "Status", "Step", "Since"]}>
              {active.map((job) => (
                <tr key={job.id}>
                  <td className="px-2 py-2">
                    <Link
                      href={`/jobs/${job.id}`}
                      className="font-mono text-xs break-all text-blue-700 hover:underline"
                    >
                      {job.id}
                    </Link>
                  </td>
                  <td className="px-2 py-2">{job.kind}</td>
                  <td className="px-2 py-2">
                    <Link href={`/adapters/${job.adapterId}`} className="text-blue-700 hover:underline">
                      {names.get(job.adapterId) ?? job.adapterId}
                    </Link>
                  </td>
                  <td className="px-2 py-2">
                    <StatusBadge status={job.status} />
                  </td>
                  <td className="px-2 py-2 tabular-nums">{progress(job)}</td>
                  <td className="px-2 py-2 whitespace-nowrap">
                    <When iso={job.startedAt ?? job.createdAt} />
                  </td>
                </tr>
              ))}
            </Table>
          );
        }}
      </QueryView>
    </Card>
  );
}

/** "12 / 100" when the job's config says how many steps it runs, else the step. */
function progress(job: Job): string {
  const steps = job.config.steps;
  return typeof steps === "number" ? `${job.step} / ${steps}` : String(job.step);
}
