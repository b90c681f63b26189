import { type Db, publishSnapshot } from "@opentinker/db";
import {
  type SnapshotRecord,
  type SnapshotRegistry,
  type StoredObject,
  UnknownHandleError,
} from "@opentinker/engine";
import { parseSamplerHandle } from "@opentinker/protocol";

type SnapshotRow = { handle: string; version: number; path: string; checksum: string; trainerStep: number };

/**
 * The engine's snapshot registry over Postgres (C2, C3): versions are allocated
 * by the database, so they stay contiguous across workers and restarts. The
 * `team` argument of publish/latest is the team id; handles carry the slug.
 */
export class DbSnapshotRegistry implements SnapshotRegistry {
  constructor(
    private readonly db: Db,
    private readonly baseModelOf: (adapterId: string) => Promise<string>,
    private readonly jobId?: string,
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
      ...(this.jobId ? { jobId: this.jobId } : {}),
    });
    return this.record(row, adapter);
  }

  async resolve(handle: string): Promise<SnapshotRecord> {
    const { adapter } = parseSamplerHandle(handle);
    const row = await this.db.snapshot.findUnique({ where: { handle } });
    if (!row) throw new UnknownHandleError(`unknown policy handle ${handle}`);
    return this.record(row, adapter);
  }

  async latest(team: string, adapter: string): Promise<SnapshotRecord | null> {
    const entry = await this.db.snapshotRegistry.findFirst({
      where: { teamId: team, adapterId: adapter },
      select: { snapshot: true },
    });
    return entry?.snapshot ? this.record(entry.snapshot, adapter) : null;
  }
}
