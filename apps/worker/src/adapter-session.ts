// A team's adapter opened on this worker (C1): its policy over the hosted base
// model, restored from its last checkpoint, in a PolicySession that records
// every snapshot, checkpoint and trainer step in Postgres before it returns.
import { sessionAdapter } from "@opentinker/db";
import { createPolicy, PolicySession } from "@opentinker/engine";
import type { EngineHost } from "./engine-host.ts";

export async function openAdapterSession(
  host: EngineHost,
  teamId: string,
  adapterId: string,
): Promise<PolicySession> {
  const adapter = await sessionAdapter(host.db, teamId, adapterId);
  if (!adapter) throw new RangeError(`adapter ${adapterId} not found`);
  const policy = createPolicy(host.base(adapter.baseModelId).model, {
    ...adapter,
    kind: adapter.kind === "FULL" ? "full" : "lora",
  });
  const where = { teamId, team: adapter.team.slug, adapter: adapter.id };
  return PolicySession.open(policy, where, { store: host.store, registry: host.registry });
}
