// Where a sampler looks up a policy handle (C2, C3): the snapshot's location and
// checksum. In-process runs use the in-memory registry below; the control plane
// implements the same interface over the database.
import { formatSamplerHandle, parseSamplerHandle } from "@opentinker/protocol";
import type { StoredObject } from "@opentinker/store";

export interface SnapshotRecord {
  handle: string;
  version: number;
  path: string;
  checksum: string;
  trainerStep: number;
  /** The base model the snapshot's policy was trained over. */
  baseModel?: string;
}

export interface SnapshotRegistry {
  /** Publishes the next version of an adapter; returns its record with a new handle. */
  publish(
    team: string,
    adapter: string,
    stored: StoredObject,
    trainerStep: number,
    baseModel?: string,
  ): Promise<SnapshotRecord>;
  resolve(handle: string): Promise<SnapshotRecord>;
  latest(team: string, adapter: string): Promise<SnapshotRecord | null>;
}

export class UnknownHandleError extends Error {
  override name = "UnknownHandleError";
}

/** A lookup by handle, with an unknown handle answered as null (any other failure still throws). */
export function unknownAsNull<T>(lookup: Promise<T>): Promise<T | null> {
  return lookup.catch((e: unknown) => {
    if (e instanceof UnknownHandleError) return null;
    throw e;
  });
}

export class InMemorySnapshotRegistry implements SnapshotRegistry {
  private readonly records = new Map<string, SnapshotRecord>();
  private readonly latestByAdapter = new Map<string, SnapshotRecord>();

  async publish(
    team: string,
    adapter: string,
    stored: StoredObject,
    trainerStep: number,
    baseModel?: string,
  ): Promise<SnapshotRecord> {
    const key = `${team}/${adapter}`;
    const version = (this.latestByAdapter.get(key)?.version ?? 0) + 1;
    const record = {
      handle: formatSamplerHandle({ team, adapter, version }),
      version,
      path: stored.path,
      checksum: stored.checksum,
      trainerStep,
      ...(baseModel ? { baseModel } : {}),
    };
    this.records.set(record.handle, record);
    this.latestByAdapter.set(key, record);
    return record;
  }

  async resolve(handle: string): Promise<SnapshotRecord> {
    parseSamplerHandle(handle); // a malformed handle is a RangeError naming the expected form
    const record = this.records.get(handle);
    if (!record) throw new UnknownHandleError(`unknown policy handle ${handle}`);
    return record;
  }

  async latest(team: string, adapter: string): Promise<SnapshotRecord | null> {
    return this.latestByAdapter.get(`${team}/${adapter}`) ?? null;
  }
}
