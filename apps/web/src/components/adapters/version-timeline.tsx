"use client";
// An adapter's published versions, newest first: trainer step, the job that
// produced it (or the API), when, whether it was superseded, and its files.
import { useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useTRPC } from "../../lib/trpc.ts";
import { QueryList, timeAgo } from "../ui.tsx";
import { BestBadge } from "./best-version.tsx";
import { DownloadFiles } from "./download-files.tsx";

/** A version no surviving training state produced (its job resumed from an earlier checkpoint). */
export function SupersededBadge() {
  return (
    <span
      className="rounded bg-amber-100 px-1.5 py-0.5 text-xs font-medium text-amber-900"
      title="Its training state was lost and the job resumed from an earlier checkpoint: no surviving state has these weights. It stays loadable."
    >
      superseded
    </span>
  );
}

export function VersionTimeline({ adapterId, kind }: { adapterId: string; kind: "LORA" | "FULL" }) {
  const trpc = useTRPC();
  const versions = useQuery({
    ...trpc.adapters.versions.queryOptions({ adapterId }),
    refetchInterval: 10_000,
  });
  const label = kind === "LORA" ? "Download PEFT files" : "Download model files";
  return (
    <QueryList
      query={versions}
      what="versions"
      empty="No versions yet. Training publishes one each time it saves weights for sampling."
    >
      {(list) => (
        <ol aria-label="Versions" className="relative space-y-4 border-l-2 border-gray-200 pl-4">
          {[...list].reverse().map((v) => (
            <li key={v.handle} className="relative">
              <span
                aria-hidden="true"
                className="absolute top-1.5 -left-[23px] size-3 rounded-full border-2 border-white bg-blue-600"
              />
              <div className="flex flex-wrap items-baseline gap-x-3 gap-y-1">
                <span className="font-semibold tabular-nums">v{v.version}</span>
                {v.supersededAt ? <SupersededBadge /> : null}
                {v.tags.includes("best") ? <BestBadge /> : null}
                <span className="text-sm text-gray-600 tabular-nums">trainer step {v.trainerStep}</span>
                <time dateTime={v.createdAt} className="text-sm text-gray-500">
                  {timeAgo(v.createdAt)}
                </time>
              </div>
              <p className="mt-1 text-sm">
                Produced by{" "}
                {v.jobId ? (
                  <Link
                    href={`/jobs/${v.jobId}`}
                    className="font-mono text-xs break-all text-blue-700 underline"
                  >
                    job {v.jobId}
                  </Link>
                ) : (
                  "API"
                )}
              </p>
              <div className="mt-2">
                <DownloadFiles handle={v.handle} version={v.version} label={label} />
              </div>
            </li>
          ))}
        </ol>
      )}
    </QueryList>
  );
}
