"use client";
// The overview's latest published adapter versions (snapshots) of the team.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { SupersededBadge } from "../adapters/version-timeline.tsx";
import { When } from "../shared/when.tsx";
import { Card, Empty, QueryView, Table } from "../ui.tsx";

export function RecentSnapshots() {
  const trpc = useTRPC();
  const snapshots = useQuery({
    ...trpc.adapters.recentVersions.queryOptions({ limit: 10 }),
    refetchInterval: 10_000,
  });
  return (
    <Card title="Recent snapshots">
      <QueryView query={snapshots} what="snapshots">
        {(list) =>
          list.length === 0 ? (
            <Empty>No snapshots yet. Training publishes one per saved version.</Empty>
          ) : (
            <Table head={["Adapter", "Version", "Step", "Produced by", "Published"]}>
              {list.map((s) => (
                <tr key={s.handle}>
                  <td className="px-2 py-2">
                    <Link href={`/adapters/${s.adapterId}`} className="text-blue-700 hover:underline">
                      {s.adapterName}
                    </Link>
                  </td>
                  <td className="px-2 py-2 tabular-nums">
                    v{s.version} {s.supersededAt ? <SupersededBadge /> : null}
                  </td>
                  <td className="px-2 py-2 tabular-nums">{s.trainerStep}</td>
                  <td className="px-2 py-2">
                    {s.jobId ? (
                      <Link
                        href={`/jobs/${s.jobId}`}
                        className="font-mono text-xs break-all text-blue-700 hover:underline"
                      >
                        {s.jobId}
                      </Link>
                    ) : (
                      "API"
                    )}
                  </td>
                  <td className="px-2 py-2 whitespace-nowrap">
                    <When iso={s.createdAt} />
                  </td>
                </tr>
              ))}
            </Table>
          )
        }
      </QueryView>
    </Card>
  );
}
