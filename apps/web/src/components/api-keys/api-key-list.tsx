"use client";
// The team's API keys: name, prefix, when created and last used, and revocation.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { useRefreshingMutation } from "../shared/use-refreshing-mutation.ts";
import { When } from "../shared/when.tsx";
import { type Column, QueryTable } from "../ui.tsx";

type ApiKey = Outputs["apiKeys"]["list"][number];

const COLUMNS: Column<ApiKey>[] = [
  { head: "Name", cell: (k) => k.name, className: "font-medium" },
  { head: "Prefix", cell: (k) => `${k.prefix}…`, className: "font-mono text-xs" },
  { head: "Created", cell: (k) => <When iso={k.createdAt} /> },
  {
    head: "Last used",
    cell: (k) => (k.lastUsedAt ? <When iso={k.lastUsedAt} /> : "never"),
    className: "whitespace-nowrap",
  },
  {
    head: "Status",
    cell: (k) =>
      k.revokedAt ? (
        <span className="rounded bg-red-100 px-2 py-0.5 text-xs font-medium text-red-800">
          Revoked <When iso={k.revokedAt} />
        </span>
      ) : (
        <span className="rounded bg-green-100 px-2 py-0.5 text-xs font-medium text-green-800">Active</span>
      ),
    className: "whitespace-nowrap",
  },
  { head: "Actions", cell: (k) => !k.revokedAt && <RevokeKey apiKey={k} /> },
];

export function ApiKeyList() {
  const trpc = useTRPC();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({}));
  return (
    <QueryTable
      query={keys}
      what="API keys"
      empty="No API keys yet. Create one to use the SDK or the REST API."
      columns={COLUMNS}
      rowKey={(k) => k.id}
    />
  );
}

function RevokeKey({ apiKey }: { apiKey: ApiKey }) {
  const trpc = useTRPC();
  const revoke = useRefreshingMutation(trpc.apiKeys.revoke.mutationOptions(), trpc.apiKeys.list.queryKey());
  return (
    <ConfirmButton
      label="Revoke"
      question={`Revoke ${apiKey.name}? Clients using it stop working.`}
      onConfirm={() => revoke.mutate({ keyId: apiKey.id })}
      pending={revoke.isPending}
      error={revoke.error}
    />
  );
}
