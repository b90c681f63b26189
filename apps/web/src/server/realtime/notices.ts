// What workers announce on METRICS_CHANNEL (see recordJobStep and finishJob in
// @opentinker/db), validated here because a NOTIFY payload is just text.
import type { JobStatus } from "@opentinker/db";
import { z } from "zod";

const JOB_STATUSES = [
  "QUEUED",
  "RUNNING",
  "SUCCEEDED",
  "FAILED",
  "CANCELLED",
] as const satisfies readonly JobStatus[];

const ZStepNotice = z.object({
  teamId: z.string().min(1),
  jobId: z.string().min(1),
  step: z.number().int().nonnegative(),
});

const ZStatusNotice = z.object({
  teamId: z.string().min(1),
  jobId: z.string().min(1),
  status: z.enum(JOB_STATUSES),
});

const ZMetricsNotice = z.union([ZStepNotice, ZStatusNotice]);
export type MetricsNotice = z.infer<typeof ZMetricsNotice>;

/** The notice a payload carries, or null for one this process cannot use. */
export function parseMetricsNotice(payload: string): MetricsNotice | null {
  try {
    return ZMetricsNotice.safeParse(JSON.parse(payload)).data ?? null;
  } catch {
    return null;
  }
}
