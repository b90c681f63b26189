"use client";
// The team's adapters, newest first.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { When } from "../shared/when.tsx";
import { type Column, QueryTable } from "../ui.tsx";

export const KIND_LABEL = { LORA: "LoRA", FULL: "Full" } as const;

type Adapter = Outputs["adapters"]["list"][number];

const COLUMNS: Column<Adapter>[] = [
  {
    head: "Name",
    cell: (a) => (
      <>
        <Link href={`/adapters/${a.id}`} className="font-medium text-blue-700 hover:underline">
          {a.name}
        </Link>
        {a.status === "ARCHIVED" && <span className="ml-2 text-xs text-gray-500">archived</span>}
      </>
    ),
  },
  { head: "Base model", cell: (a) => a.baseModel },
  { head: "Kind", cell: (a) => KIND_LABEL[a.kind] },
  { head: "Rank", cell: (a) => a.rank ?? "—", className: "tabular-nums" },
  { head: "Step", cell: (a) => a.step, className: "tabular-nums" },
  { head: "Created", cell: (a) => <When iso={a.createdAt} /> },
];

export function AdapterList() {
  const trpc = useTRPC();
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  return (
    <QueryTable
      query={adapters}
      what="adapters"
      empty="No adapters yet. Create one with the form."
      columns={COLUMNS}
      rowKey={(a) => a.id}
    />
  );
}
