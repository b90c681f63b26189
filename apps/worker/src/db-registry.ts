import { type Db, getSnapshotByHandle, latestSnapshot, publishSnapshot } from "@opentinker/db";
import {
  type SnapshotRecord,
  type SnapshotRegistry,
  type StoredObject,
  UnknownHandleError,
} from "@opentinker/engine";

type SnapshotRow = { handle: string; version: number; path: string; checksum: string; trainerStep: number };

/** Resolved handles (immutable) are remembered a minute: every rollout turn resolves its policy. */
const RESOLVED_TTL_MS = 60_000;

/**
 * The engine's snapshot registry over Postgres (C2, C3): versions are allocated
 * by the database, so they stay contiguous across workers and restarts. The
 * `team` argument of publish/latest is the team id. A handle is only ever
 * resolved within a team (`resolveInTeam`), because the samplers are shared by
 * every team: the worker resolves a request's handle within the request's team
 * and hands the sampler the record.
 */
export class DbSnapshotRegistry implements SnapshotRegistry {
  private readonly resolved = new Map<string, { record: SnapshotRecord; until: number }>();

  constructor(
    private readonly db: Db,
    private readonly baseModelOf: (adapterId: string) => Promise<string>,
  ) {}

  private async record(row: SnapshotRow, adapterId: string): Promise<SnapshotRecord> {
    return {
      handle: row.handle,
      version: row.version,
      path: row.path,
      checksum: row.checksum,
      trainerStep: row.trainerStep,
      baseModel: await this.baseModelOf(adapterId),
    };
  }

  async publish(
    team: string,
    adapter: string,
    stored: StoredObject,
    trainerStep: number,
  ): Promise<SnapshotRecord> {
    const row = await publishSnapshot(this.db, team, {
      adapterId: adapter,
      path: stored.path,
      checksum: stored.checksum,
      trainerStep,
    });
    return this.record(row, adapter);
  }

  /** A handle with no team to resolve it in is a bug in the caller, never a lookup. */
  async resolve(handle: string): Promise<SnapshotRecord> {
    throw new UnknownHandleError(`policy handle ${handle} must be resolved within a team`);
  }

  /** The team's snapshot with this handle; another team's answers like an unknown one. */
  async resolveInTeam(teamId: string, handle: string): Promise<SnapshotRecord> {
    const key = `${teamId}\0${handle}`;
    const hit = this.resolved.get(key);
    if (hit && hit.until > Date.now()) return hit.record;
    const row = await getSnapshotByHandle(this.db, teamId, handle);
    if (!row) throw new UnknownHandleError(`unknown policy handle ${handle}`);
    const record = await this.record(row, row.adapterId);
    if (this.resolved.size > 10_000) this.resolved.clear();
    this.resolved.set(key, { record, until: Date.now() + RESOLVED_TTL_MS });
    return record;
  }

  async latest(team: string, adapter: string): Promise<SnapshotRecord | null> {
    const row = await latestSnapshot(this.db, team, adapter);
    return row ? this.record(row, adapter) : null;
  }
}
