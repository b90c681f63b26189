"use client";
// An adapter's saved training states (weights and optimizer), oldest first,
// each with the path load_state takes.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import { bytes } from "../shared/format.ts";
import { QueryList, timeAgo } from "../ui.tsx";

export function CheckpointList({ adapterId }: { adapterId: string }) {
  const trpc = useTRPC();
  const checkpoints = useQuery(trpc.adapters.checkpoints.queryOptions({ adapterId }));
  return (
    <QueryList query={checkpoints} what="checkpoints" empty="No checkpoints yet.">
      {(list) => (
        <ul aria-label="Checkpoints" className="divide-y divide-gray-100">
          {list.map((c) => (
            <li key={c.path} className="py-2 first:pt-0 last:pb-0">
              <div className="flex flex-wrap items-baseline justify-between gap-x-3">
                <span className="font-medium break-all">{c.name}</span>
                <span className="text-sm whitespace-nowrap text-gray-600 tabular-nums">
                  step {c.step} · {bytes(c.sizeBytes)} ·{" "}
                  <time dateTime={c.createdAt}>{timeAgo(c.createdAt)}</time>
                </span>
              </div>
              <code className="block text-xs break-all text-gray-500">{c.path}</code>
            </li>
          ))}
        </ul>
      )}
    </QueryList>
  );
}
