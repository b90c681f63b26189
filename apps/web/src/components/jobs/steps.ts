// What "step" means on the job pages. A step is numbered from 0, as the worker
// stores it with its metrics and trajectories, and as the charts, "All metrics"
// and the trajectories page show it; a job's `step` field counts the steps
// stored so far, so it is one more than the newest step's number.
import { jobSteps } from "@opentinker/protocol";
import type { Connection } from "../../lib/realtime.ts";

/** The newest stored step's number, given how many are stored; none before the first. */
export const latestStep = (stored: number): number | undefined => (stored > 0 ? stored - 1 : undefined);

/** How many steps the job runs (an SFT job's from its epochs and batches), if its config says. */
export const totalSteps = (job: {
  kind: "RL" | "SFT" | "EVAL";
  config: Readonly<Record<string, unknown>>;
}): number | undefined => jobSteps(job);

/** "198 of 400 done", or "198 done" when the config does not say how many steps the job runs. */
export const stepsDone = (stored: number, total: number | undefined): string =>
  total === undefined ? `${stored} done` : `${stored} of ${total} done`;

/** What the live indicator shows: the connection while the job runs or waits, "ended" after. */
export type LiveState = Connection["state"] | "ended";

export const liveState = (connection: Connection["state"], jobActive: boolean): LiveState =>
  jobActive ? connection : "ended";
