"use client";
// Shapes and small queries the jobs pages share.
import { useQuery } from "@tanstack/react-query";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";

export type Job = Outputs["jobs"]["get"];
export type JobKind = Job["kind"];
export type JobStatus = Job["status"];
export type Trajectory = Outputs["jobs"]["trajectories"][number];

export const isActive = (status: JobStatus) => status === "QUEUED" || status === "RUNNING";

/** Adapter names by id, for showing jobs by their adapter's name (the id until they load). */
export function useAdapterNames(): ReadonlyMap<string, string> {
  const trpc = useTRPC();
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  return new Map((adapters.data ?? []).map((a) => [a.id, a.name]));
}
