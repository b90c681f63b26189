"use client";
// The team's environments, newest first, each with its settings and a delete.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { useRefreshingMutation } from "../shared/use-refreshing-mutation.ts";
import { When } from "../shared/when.tsx";
import { type Column, QueryTable } from "../ui.tsx";
import { BUILTIN_LABEL, CONFIG_LABEL, describeValue, isBuiltin, isConfigKey } from "./builtin-config.ts";

type Environment = Outputs["environments"]["list"][number];

const COLUMNS: Column<Environment>[] = [
  { head: "Name", cell: (e) => e.name, className: "font-medium" },
  {
    head: "Kind",
    cell: (e) =>
      e.kind === "REMOTE"
        ? "Remote"
        : e.builtin && isBuiltin(e.builtin)
          ? BUILTIN_LABEL[e.builtin]
          : e.builtin,
    className: "whitespace-nowrap",
  },
  { head: "Settings", cell: (e) => <Settings environment={e} />, className: "text-xs text-gray-600" },
  { head: "Created", cell: (e) => <When iso={e.createdAt} /> },
  { head: "Actions", cell: (e) => <DeleteEnvironment environment={e} /> },
];

export function EnvironmentList() {
  const trpc = useTRPC();
  const environments = useQuery(trpc.environments.list.queryOptions({}));
  return (
    <QueryTable
      query={environments}
      what="environments"
      empty="No environments yet. Create one with the form."
      columns={COLUMNS}
      rowKey={(e) => e.id}
    />
  );
}

function Settings({ environment: e }: { environment: Environment }) {
  if (e.kind === "REMOTE") return <span className="font-mono break-all">{e.url}</span>;
  const entries = Object.entries(e.config);
  if (entries.length === 0) return <>defaults</>;
  return (
    <>
      {entries
        .map(([key, value]) =>
          isConfigKey(key) ? `${CONFIG_LABEL[key].label}: ${describeValue(key, value)}` : `${key}: ${value}`,
        )
        .join(" · ")}
    </>
  );
}

function DeleteEnvironment({ environment }: { environment: Environment }) {
  const trpc = useTRPC();
  const remove = useRefreshingMutation(
    trpc.environments.delete.mutationOptions(),
    trpc.environments.list.queryKey(),
  );
  return (
    <ConfirmButton
      label="Delete"
      question={`Delete ${environment.name}?`}
      onConfirm={() => remove.mutate({ environmentId: environment.id })}
      pending={remove.isPending}
      error={remove.error}
    />
  );
}
