// The realtime API, typed once: the server (metrics-relay.ts) and its clients
// (the dashboard, tests) import these names and payloads, so both sides agree.
// Nothing here touches Node or the database, so a browser bundle can import it.
import type { JobStatus } from "@opentinker/db";
import { z } from "zod";

/** Where the Socket.IO server answers on the web process's HTTP server. */
export const REALTIME_PATH = "/socket.io";

/** The room a job's subscribers join; job ids are unique across teams. */
export const jobRoom = (jobId: string): string => `job:${jobId}`;

export const ZJobRequest = z.object({ jobId: z.string().min(1) });
export type JobRequest = z.infer<typeof ZJobRequest>;

export interface MetricPoint {
  step: number;
  name: string;
  value: number;
}

/** Answer to `subscribe`: the job's metrics so far, so a client draws history then follows live. */
export type SubscribeAck = { ok: true; metrics: MetricPoint[] } | { ok: false; error: string };
export type UnsubscribeAck = { ok: true } | { ok: false; error: string };

/** One stored step of a job: every metric recorded for it, by name. */
export interface MetricsEvent {
  jobId: string;
  step: number;
  values: Record<string, number>;
}

export interface StatusEvent {
  jobId: string;
  status: JobStatus;
}

export interface ClientToServerEvents {
  subscribe: (request: JobRequest, ack: (answer: SubscribeAck) => void) => void;
  unsubscribe: (request: JobRequest, ack?: (answer: UnsubscribeAck) => void) => void;
}

export interface ServerToClientEvents {
  metrics: (event: MetricsEvent) => void;
  status: (event: StatusEvent) => void;
}
