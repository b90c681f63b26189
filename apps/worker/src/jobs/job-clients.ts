// The in-process clients a server-side job runs the SDK loops with: training
// goes straight to the adapter's session on this worker, sampling to this
// worker's sampler, and snapshots and checkpoints are recorded under the job.
import { InProcessSamplingClient, InProcessTrainingClient, type PolicySession } from "@opentinker/engine";
import type { SamplingClient } from "@opentinker/protocol";
import type { EngineHost } from "../engine-host.ts";

/** `signal` aborts the job's sampling in flight (the job was cancelled, or the worker drains). */
export function jobTrainingClient(
  host: EngineHost,
  session: PolicySession,
  jobId: string,
  signal?: AbortSignal,
): InProcessTrainingClient {
  return new InProcessTrainingClient(session, {
    jobId,
    sampling: async (handle) => (await jobSampler(host, session, handle, signal)).client,
  });
}

/**
 * A job's sampler over one of its team's snapshots (resolved within the team,
 * and over the adapter's base model), sharing the worker's sampler fairly with
 * other teams' requests.
 */
export async function jobSampler(
  host: EngineHost,
  session: PolicySession,
  handle: string,
  signal?: AbortSignal,
): Promise<{ client: SamplingClient; version: number }> {
  const { teamId } = session.where;
  const record = await host.registry.resolveInTeam(teamId, handle);
  const base = host.baseOf(session);
  if (record.baseModel !== base.name)
    throw new RangeError(
      `${handle} was trained over ${record.baseModel}, not the adapter's base model ${base.name}`,
    );
  const options = { tenant: teamId, ...(signal ? { signal } : {}) };
  return {
    client: new InProcessSamplingClient(host.sampler(base.id), record, base.model, options),
    version: record.version,
  };
}
