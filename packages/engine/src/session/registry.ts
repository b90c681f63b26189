// What a PolicySession records of the objects it writes to the store: published
// snapshots, named checkpoints and the trainer step. The worker's registry is
// Postgres (every query within the policy's team); scripts and tests keep it in
// memory over a SnapshotRegistry.
import { parseSamplerHandle, type SavedWeights } from "@opentinker/protocol";
import type { StoredObject } from "@opentinker/store";
import { type SnapshotRecord, type SnapshotRegistry, unknownAsNull } from "../snapshots/registry.ts";

/** Whose policy a session trains. */
export interface PolicyLocation {
  /** The owning team's id: every record is filed and looked up under it. */
  teamId: string;
  /** The team as handles and state paths name it (its slug). */
  team: string;
  adapter: string;
}

/** What restoring a stored object needs: where it is and its checksum. */
export type StoredRef = Pick<StoredObject, "path" | "checksum">;

/** An object the session wrote, with what it was written from. */
export interface RecordedObject {
  stored: StoredObject;
  trainerStep: number;
  /** The base model the policy trains over. */
  baseModel: string;
  /** The server-side job that wrote it, if any (retention and resume go by it). */
  jobId?: string;
}

export interface PolicyRegistry {
  /** Publishes a written snapshot as the policy's next immutable version. */
  publishSnapshot(
    where: PolicyLocation,
    snapshot: RecordedObject,
    options?: { expiresAt?: Date | null },
  ): Promise<SavedWeights>;
  /** Whether the policy already has a checkpoint named `name`. */
  hasCheckpoint(where: PolicyLocation, name: string): Promise<boolean>;
  /**
   * Records a written checkpoint under `name`; with `replace`, in place of the
   * policy's checkpoint of that name, whose stored path it returns (for the
   * caller to delete); else null.
   */
  recordCheckpoint(
    where: PolicyLocation,
    name: string,
    checkpoint: RecordedObject,
    options?: { replace?: boolean; expiresAt?: Date | null },
  ): Promise<string | null>;
  /** The policy's own checkpoint named `name`, or null. */
  findCheckpoint(where: PolicyLocation, name: string): Promise<StoredRef | null>;
  /** Another team's checkpoint while its owner publishes it (`team` as paths name it), or null. */
  findPublishedCheckpoint(team: string, adapter: string, name: string): Promise<StoredRef | null>;
  /**
   * A snapshot the policy's team may sample (its own, or one another team
   * publishes), by handle; any other answers null, like a missing one.
   */
  findSnapshot(where: PolicyLocation, handle: string): Promise<SnapshotRecord | null>;
  /** The policy's most recently saved checkpoint (restored when a session opens), or null. */
  latestCheckpoint(where: PolicyLocation): Promise<StoredRef | null>;
  /** The trainer step changed (an optimizer step, a restore): a durable registry writes it down. */
  recordStep(where: PolicyLocation, step: number): Promise<void>;
}

/** Checkpoints in memory, snapshots published to a SnapshotRegistry (in-process clients). */
export class InMemoryPolicyRegistry implements PolicyRegistry {
  /** Per policy, its checkpoints by name, in the order they were saved. */
  private readonly checkpoints = new Map<string, Map<string, RecordedObject>>();

  constructor(private readonly snapshots: SnapshotRegistry) {}

  private of(where: PolicyLocation): Map<string, RecordedObject> {
    const key = `${where.teamId}/${where.adapter}`;
    let named = this.checkpoints.get(key);
    if (!named) {
      named = new Map();
      this.checkpoints.set(key, named);
    }
    return named;
  }

  async publishSnapshot(where: PolicyLocation, s: RecordedObject): Promise<SavedWeights> {
    const record = await this.snapshots.publish(
      where.team,
      where.adapter,
      s.stored,
      s.trainerStep,
      s.baseModel,
    );
    return { handle: record.handle, version: record.version };
  }

  async hasCheckpoint(where: PolicyLocation, name: string): Promise<boolean> {
    return this.of(where).has(name);
  }

  async recordCheckpoint(
    where: PolicyLocation,
    name: string,
    checkpoint: RecordedObject,
    options: { replace?: boolean } = {},
  ): Promise<string | null> {
    const replaced = options.replace ? (this.of(where).get(name)?.stored.path ?? null) : null;
    // Re-inserted, so the map's order stays the order of saving.
    this.of(where).delete(name);
    this.of(where).set(name, checkpoint);
    return replaced;
  }

  async findCheckpoint(where: PolicyLocation, name: string): Promise<StoredRef | null> {
    return this.of(where).get(name)?.stored ?? null;
  }

  /** In-process policies belong to one owner: nothing is published to others. */
  async findPublishedCheckpoint(): Promise<StoredRef | null> {
    return null;
  }

  /** In-process snapshots are filed under the team as handles name it. */
  async findSnapshot(where: PolicyLocation, handle: string): Promise<SnapshotRecord | null> {
    if (parseSamplerHandle(handle).team !== where.team) return null;
    return unknownAsNull(this.snapshots.resolve(handle));
  }

  /** The most recently saved (as the worker's registry orders them). */
  async latestCheckpoint(where: PolicyLocation): Promise<StoredRef | null> {
    return [...this.of(where).values()].at(-1)?.stored ?? null;
  }

  async recordStep(): Promise<void> {}
}
