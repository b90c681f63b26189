"use client";
// One adapter: its settings, version timeline, checkpoints, and deletion. An id
// the team does not own reads "Adapter not found" (the API answers NOT_FOUND).
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import type { ReactNode } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { errorCode, type Outputs } from "../shared/api.ts";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { Page } from "../shared/page.tsx";
import { Card, ErrorState, Loading, StatusBadge, timeAgo } from "../ui.tsx";
import { KIND_LABEL } from "./adapter-list.tsx";
import { BestVersionText } from "./best-version.tsx";
import { CheckpointList } from "./checkpoint-list.tsx";
import { VersionTimeline } from "./version-timeline.tsx";

type Adapter = Outputs["adapters"]["get"];

export function AdapterDetails({ adapterId }: { adapterId: string }) {
  const trpc = useTRPC();
  const adapter = useQuery(trpc.adapters.get.queryOptions({ adapterId }));
  if (adapter.isPending) return <Loading what="the adapter" />;
  if (adapter.error)
    return errorCode(adapter.error) === "NOT_FOUND" ? <NotFound /> : <ErrorState error={adapter.error} />;
  const a = adapter.data;
  return (
    <Page title={a.name} actions={<DeleteAdapter adapter={a} />}>
      <div className="grid gap-6 lg:grid-cols-3">
        <Card title="Details" className="min-w-0">
          <Settings adapter={a} />
        </Card>
        <div className="min-w-0 space-y-6 lg:col-span-2">
          <Card title="Versions">
            <VersionTimeline adapterId={a.id} kind={a.kind} />
          </Card>
          <Card title="Checkpoints">
            <CheckpointList adapterId={a.id} />
          </Card>
        </div>
      </div>
    </Page>
  );
}

function NotFound() {
  return (
    <Page
      title="Adapter not found"
      description={
        <>
          There is no adapter with this id in your team.{" "}
          <Link href="/adapters" className="text-blue-700 underline">
            Back to adapters
          </Link>
        </>
      }
    />
  );
}

function Settings({ adapter: a }: { adapter: Adapter }) {
  const targets = [a.trainAttn && "attention", a.trainMlp && "MLP", a.trainUnembed && "unembedding"].filter(
    Boolean,
  );
  const rows: [string, ReactNode][] = [
    ["Status", <StatusBadge key="status" status={a.status} />],
    ["Base model", a.baseModel],
    ["Kind", KIND_LABEL[a.kind]],
    ...(a.kind === "LORA"
      ? ([
          ["Rank", a.rank],
          ["Alpha", a.alpha],
          ["Target modules", targets.join(", ")],
        ] as [string, ReactNode][])
      : []),
    ["Seed", a.seed],
    ["Step", a.step],
    [
      "Best version",
      a.best ? <BestVersionText key="best" best={a.best} /> : "none yet (no job has validated it)",
    ],
    ["Created", timeAgo(a.createdAt)],
    [
      "ID",
      <span key="id" className="font-mono text-xs break-all">
        {a.id}
      </span>,
    ],
  ];
  return (
    <dl className="grid grid-cols-[auto_1fr] gap-x-4 gap-y-2 text-sm">
      {rows.map(([term, value]) => (
        <div key={term} className="contents">
          <dt className="font-medium text-gray-600">{term}</dt>
          <dd>{value}</dd>
        </div>
      ))}
    </dl>
  );
}

function DeleteAdapter({ adapter }: { adapter: Adapter }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const router = useRouter();
  const remove = useMutation(
    trpc.adapters.delete.mutationOptions({
      onSuccess: async () => {
        await queryClient.invalidateQueries({ queryKey: trpc.adapters.list.queryKey() });
        router.push("/adapters");
      },
    }),
  );
  return (
    <ConfirmButton
      label="Delete"
      question={`Delete ${adapter.name} and all its versions?`}
      onConfirm={() => remove.mutate({ adapterId: adapter.id })}
      pending={remove.isPending}
      error={remove.error}
    />
  );
}
