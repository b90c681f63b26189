"use client";
// The team's API keys: name, prefix, when created and last used, and revocation.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { When } from "../shared/when.tsx";
import { Empty, QueryView, Table } from "../ui.tsx";

type ApiKey = Outputs["apiKeys"]["list"][number];

export function ApiKeyList() {
  const trpc = useTRPC();
  const keys = useQuery(trpc.apiKeys.list.queryOptions({}));
  return (
    <QueryView query={keys} what="API keys">
      {(list) =>
        list.length === 0 ? (
          <Empty>No API keys yet. Create one to use the SDK or the REST API.</Empty>
        ) : (
          <Table head={["Name", "Prefix", "Created", "Last used", "Status", "Actions"]}>
            {list.map((k) => (
              <tr key={k.id}>
                <td className="px-2 py-2 font-medium">{k.name}</td>
                <td className="px-2 py-2 font-mono text-xs">{k.prefix}…</td>
                <td className="px-2 py-2">
                  <When iso={k.createdAt} />
                </td>
                <td className="px-2 py-2 whitespace-nowrap">
                  {k.lastUsedAt ? <When iso={k.lastUsedAt} /> : "never"}
                </td>
                <td className="px-2 py-2 whitespace-nowrap">
                  {k.revokedAt ? (
                    <span className="rounded bg-red-100 px-2 py-0.5 text-xs font-medium text-red-800">
                      Revoked <When iso={k.revokedAt} />
                    </span>
                  ) : (
                    <span className="rounded bg-green-100 px-2 py-0.5 text-xs font-medium text-green-800">
                      Active
                    </span>
                  )}
                </td>
                <td className="px-2 py-2">{!k.revokedAt && <RevokeKey apiKey={k} />}</td>
              </tr>
            ))}
          </Table>
        )
      }
    </QueryView>
  );
}

function RevokeKey({ apiKey }: { apiKey: ApiKey }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const revoke = useMutation(
    trpc.apiKeys.revoke.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.apiKeys.list.queryKey() }),
    }),
  );
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
