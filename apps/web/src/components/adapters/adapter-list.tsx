"use client";
// The team's adapters, newest first.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { When } from "../shared/when.tsx";
import { Empty, QueryView, Table } from "../ui.tsx";

export const KIND_LABEL = { LORA: "LoRA", FULL: "Full" } as const;

export function AdapterList() {
  const trpc = useTRPC();
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  return (
    <QueryView query={adapters} what="adapters">
      {(list) =>
        list.length === 0 ? (
          <Empty>No adapters yet. Create one with the form.</Empty>
        ) : (
          <Table head={["Name", "Base model", "Kind", "Rank", "Step", "Created"]}>
            {list.map((a) => (
              <tr key={a.id}>
                <td className="px-2 py-2">
                  <Link href={`/adapters/${a.id}`} className="font-medium text-blue-700 hover:underline">
                    {a.name}
                  </Link>
                  {a.status === "ARCHIVED" && <span className="ml-2 text-xs text-gray-500">archived</span>}
                </td>
                <td className="px-2 py-2">{a.baseModel}</td>
                <td className="px-2 py-2">{KIND_LABEL[a.kind]}</td>
                <td className="px-2 py-2 tabular-nums">{a.rank ?? "—"}</td>
                <td className="px-2 py-2 tabular-nums">{a.step}</td>
                <td className="px-2 py-2">
                  <When iso={a.createdAt} />
                </td>
              </tr>
            ))}
          </Table>
        )
      }
    </QueryView>
  );
}
