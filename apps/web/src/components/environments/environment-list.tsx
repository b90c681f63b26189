"use client";
// The team's environments, newest first, each with its settings and a delete.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { ConfirmButton } from "../shared/confirm-button.tsx";
import { When } from "../shared/when.tsx";
import { Empty, QueryView, Table } from "../ui.tsx";
import { BUILTIN_LABEL, CONFIG_LABEL, isBuiltin } from "./builtin-config.ts";

type Environment = Outputs["environments"]["list"][number];

export function EnvironmentList() {
  const trpc = useTRPC();
  const environments = useQuery(trpc.environments.list.queryOptions({}));
  return (
    <QueryView query={environments} what="environments">
      {(list) =>
        list.length === 0 ? (
          <Empty>No environments yet. Create one with the form.</Empty>
        ) : (
          <Table head={["Name", "Kind", "Settings", "Created", "Actions"]}>
            {list.map((e) => (
              <tr key={e.id}>
                <td className="px-2 py-2 font-medium">{e.name}</td>
                <td className="px-2 py-2 whitespace-nowrap">
                  {e.kind === "REMOTE"
                    ? "Remote"
                    : e.builtin && isBuiltin(e.builtin)
                      ? BUILTIN_LABEL[e.builtin]
                      : e.builtin}
                </td>
                <td className="px-2 py-2 text-xs text-gray-600">
                  <Settings environment={e} />
                </td>
                <td className="px-2 py-2">
                  <When iso={e.createdAt} />
                </td>
                <td className="px-2 py-2">
                  <DeleteEnvironment environment={e} />
                </td>
              </tr>
            ))}
          </Table>
        )
      }
    </QueryView>
  );
}

function Settings({ environment: e }: { environment: Environment }) {
  if (e.kind === "REMOTE") return <span className="font-mono break-all">{e.url}</span>;
  const entries = Object.entries(e.config);
  if (entries.length === 0) return <>defaults</>;
  return (
    <>
      {entries
        .map(([key, value]) => `${CONFIG_LABEL[key as keyof typeof CONFIG_LABEL]?.label ?? key}: ${value}`)
        .join(" · ")}
    </>
  );
}

function DeleteEnvironment({ environment }: { environment: Environment }) {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const remove = useMutation(
    trpc.environments.delete.mutationOptions({
      onSuccess: () => queryClient.invalidateQueries({ queryKey: trpc.environments.list.queryKey() }),
    }),
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
