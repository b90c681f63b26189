// The worker's registry over Postgres (C2, C3): what the shared samplers resolve
// handles through, and where its policy sessions record their snapshots,
// checkpoints and steps. Versions are allocated by the database, so they stay
// contiguous across workers and restarts. Every query is within a team: the
// samplers are shared by every team, so the worker resolves a request's handle
// within the request's team (`resolveInTeam`) and hands the sampler the record.
import {
  type Db,
  findCheckpoint,
  findPublishedCheckpoint,
  latestCheckpoint,
  latestSnapshot,
  publishSnapshot,
  recordCheckpoint,
  sampleableSnapshot,
  setAdapterStep,
  snapshotAtPath,
} from "@opentinker/db";
import {
  type PolicyLocation,
  type PolicyRegistry,
  type RecordedObject,
  type SnapshotRecord,
  type SnapshotRegistry,
  type StoredRef,
  UnknownHandleError,
  unknownAsNull,
} from "@opentinker/engine";
import type { SavedWeights } from "@opentinker/protocol";
import type { StoredObject } from "@opentinker/store";
import { retryTransient } from "./faults.ts";

type SnapshotRow = { handle: string; version: number; path: string; checksum: string; trainerStep: number };

/** Resolved handles (immutable) are remembered a minute: every rollout turn resolves its policy. */
const RESOLVED_TTL_MS = 60_000;

/** The `team` of the SnapshotRegistry calls is the team id. */
export class DbSnapshotRegistry implements SnapshotRegistry, PolicyRegistry {
  private readonly resolved = new Map<string, { record: SnapshotRecord; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly baseModelOf: (adapterId: string) => Promise<string>,
  ) {}

  private async record(row: SnapshotRow, adapterId: string): Promise<SnapshotRecord> {
    const { handle, version, path, checksum, trainerStep } = row;
    return { handle, version, path, checksum, trainerStep, baseModel: await this.baseModelOf(adapterId) };
  }

  private publishRow(
    teamId: string,
    adapterId: string,
    stored: StoredObject,
    trainerStep: number,
    extra: { jobId?: string | undefined; expiresAt?: Date | null | undefined } = {},
  ) {
    const { path, checksum } = stored;
    return publishSnapshot(this.db, teamId, {
      adapterId,
      path,
      checksum,
      trainerStep,
      ...(extra.jobId ? { jobId: extra.jobId } : {}),
      expiresAt: extra.expiresAt ?? null,
    });
  }

  /**
   * Publishes through transient faults: a retry first looks for the version a
   * try whose answer was lost allocated, so no version is taken twice.
   */
  private publishOnce(
    teamId: string,
    adapterId: string,
    stored: StoredObject,
    trainerStep: number,
    extra: { jobId?: string | undefined; expiresAt?: Date | null | undefined } = {},
  ) {
    return retryTransient(`publish a snapshot of ${adapterId}`, async (attempt) => {
      const earlier = attempt > 1 ? await snapshotAtPath(this.db, teamId, adapterId, stored.path) : null;
      return earlier ?? this.publishRow(teamId, adapterId, stored, trainerStep, extra);
    });
  }

  async publish(teamId: string, adapter: string, stored: StoredObject, trainerStep: number) {
    return this.record(await this.publishOnce(teamId, adapter, stored, trainerStep), adapter);
  }

  /** A handle with no team to resolve it in is a bug in the caller, never a lookup. */
  async resolve(handle: string): Promise<SnapshotRecord> {
    throw new UnknownHandleError(`policy handle ${handle} must be resolved within a team`);
  }

  /** A snapshot the team may sample (its own, or a published one); any other answers like an unknown one. */
  async resolveInTeam(teamId: string, handle: string): Promise<SnapshotRecord> {
    const key = `${teamId}\0${handle}`;
    const hit = this.resolved.get(key);
    if (hit && hit.until > Date.now()) return hit.record;
    const row = await retryTransient(`resolve ${handle}`, () => sampleableSnapshot(this.db, teamId, handle));
    if (!row) throw new UnknownHandleError(`unknown policy handle ${handle}`);
    const record = await this.record(row, row.adapterId);
    if (this.resolved.size > 10_000) this.resolved.clear();
    this.resolved.set(key, { record, until: Date.now() + RESOLVED_TTL_MS });
    return record;
  }

  async latest(teamId: string, adapter: string): Promise<SnapshotRecord | null> {
    const row = await retryTransient(`latest snapshot of ${adapter}`, () =>
      latestSnapshot(this.db, teamId, adapter),
    );
    return row ? this.record(row, adapter) : null;
  }

  async publishSnapshot(
    where: PolicyLocation,
    snapshot: RecordedObject,
    options: { expiresAt?: Date | null } = {},
  ): Promise<SavedWeights> {
    const { stored, trainerStep, jobId } = snapshot;
    const extra = { jobId, expiresAt: options.expiresAt };
    const row = await this.publishOnce(where.teamId, where.adapter, stored, trainerStep, extra);
    return { handle: row.handle, version: row.version };
  }

  async hasCheckpoint(where: PolicyLocation, name: string): Promise<boolean> {
    return (await this.findCheckpoint(where, name)) !== null;
  }

  recordCheckpoint(
    where: PolicyLocation,
    name: string,
    checkpoint: RecordedObject,
    options: { replace?: boolean; expiresAt?: Date | null } = {},
  ): Promise<string | null> {
    const { stored, trainerStep, jobId } = checkpoint;
    const row = {
      adapterId: where.adapter,
      name,
      step: trainerStep,
      path: stored.path,
      checksum: stored.checksum,
      sizeBytes: stored.sizeBytes,
      expiresAt: options.expiresAt ?? null,
      ...(jobId ? { jobId } : {}),
    };
    // A retry whose first try's row is there (its answer was lost) is done: with
    // `replace` it would otherwise replace, and delete, its own object.
    return retryTransient(`record checkpoint ${name} of ${where.adapter}`, async (attempt) => {
      if (attempt > 1 && (await this.findCheckpoint(where, name))?.path === stored.path) return null;
      return recordCheckpoint(this.db, where.teamId, row, { replace: options.replace ?? false });
    });
  }

  findCheckpoint(where: PolicyLocation, name: string): Promise<StoredRef | null> {
    return retryTransient(`find checkpoint ${name} of ${where.adapter}`, () =>
      findCheckpoint(this.db, where.teamId, where.adapter, name),
    );
  }

  findPublishedCheckpoint(team: string, adapter: string, name: string): Promise<StoredRef | null> {
    return retryTransient(`find checkpoint ${name} of ${adapter}`, () =>
      findPublishedCheckpoint(this.db, team, adapter, name),
    );
  }

  findSnapshot(where: PolicyLocation, handle: string): Promise<SnapshotRecord | null> {
    return unknownAsNull(this.resolveInTeam(where.teamId, handle));
  }

  latestCheckpoint(where: PolicyLocation): Promise<StoredRef | null> {
    return retryTransient(`latest checkpoint of ${where.adapter}`, () =>
      latestCheckpoint(this.db, where.teamId, where.adapter),
    );
  }

  recordStep(where: PolicyLocation, step: number): Promise<void> {
    return retryTransient(`record the step of ${where.adapter}`, () =>
      setAdapterStep(this.db, where.teamId, where.adapter, step),
    );
  }
}
