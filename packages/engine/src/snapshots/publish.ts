// saveWeightsForSampler / saveState / loadState over a store (C2): what a
// training client calls at an update boundary.
import type { Policy } from "../policy/policy.ts";
import { snapshotFiles } from "./peft.ts";
import type { SnapshotRecord, SnapshotRegistry } from "./registry.ts";
import { restoreState, stateFiles } from "./state.ts";
import type { SnapshotStore, StoredObject } from "./store.ts";

export interface PolicyLocation {
  team: string;
  adapter: string;
}

/**
 * Writes an immutable snapshot of the policy as it is now and publishes it as the
 * adapter's next version; returns the record with its opaque handle.
 */
export async function saveWeightsForSampler(
  policy: Policy,
  store: SnapshotStore,
  registry: SnapshotRegistry,
  where: PolicyLocation,
): Promise<SnapshotRecord> {
  const latest = await registry.latest(where.team, where.adapter);
  const key = `${where.team}/${where.adapter}/sampler/${(latest?.version ?? 0) + 1}`;
  const stored = await store.put(key, snapshotFiles(policy));
  return registry.publish(where.team, where.adapter, stored, policy.step, policy.base.name);
}

/** Checkpoints weights, AdamW moments and step under `name`. */
export function saveState(
  policy: Policy,
  store: SnapshotStore,
  where: PolicyLocation,
  name: string,
): Promise<StoredObject> {
  return store.put(`${where.team}/${where.adapter}/state/${name}`, stateFiles(policy));
}

/** Restores a checkpoint (its checksum verified); a mismatch changes nothing. */
export async function loadState(policy: Policy, store: SnapshotStore, saved: StoredObject): Promise<void> {
  restoreState(policy, await store.get(saved.path, saved.checksum), saved.path);
}
