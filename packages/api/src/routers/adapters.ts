// Adapters: created within the team's quota over a named base model, listed,
// deleted with their history; their published versions and saved states.
import {
  bestInfo,
  createAdapterWithinQuota,
  deleteAdapter,
  getAdapter,
  getSnapshotByHandle,
  listAdapterCheckpoints,
  listAdapters,
  listAdapterVersions,
  listLatestVersions,
  listRecentSnapshots,
  snapshotInfo,
} from "@opentinker/db";
import {
  type AdapterInfo,
  type BestVersion,
  type CheckpointInfo,
  formatStatePath,
  type SnapshotVersion,
  ZAdapter,
  ZAdapterIdRequest,
  ZAdapterLatestVersion,
  ZCheckpoint,
  ZCreateAdapterRequest,
  ZRecentSnapshot,
  ZRecentSnapshotsRequest,
  ZSnapshot,
  ZSnapshotDownloadRequest,
  ZSnapshotFiles,
  ZSnapshotInfo,
  ZSnapshotLookupRequest,
} from "@opentinker/protocol";
import { z } from "zod";
import { iso, isoOrNull } from "../present.ts";
import { deleteProcedure, readProcedures } from "../resource.ts";
import { readSnapshotFiles } from "../snapshot-files.ts";
import { found, router, teamRoute } from "../trpc.ts";

type AdapterRow = NonNullable<Awaited<ReturnType<typeof getAdapter>>>;

const presentBest = (tag: AdapterRow["tags"][number]): BestVersion => {
  const { markedAt, ...best } = bestInfo(tag);
  return { ...best, markedAt: iso(markedAt) };
};

// The row less what the API does not show, its base model by name.
const present = ({ teamId: _, baseModelId: __, updatedAt: ___, tags, ...a }: AdapterRow): AdapterInfo => ({
  ...a,
  baseModel: a.baseModel.name,
  createdAt: iso(a.createdAt),
  best: tags[0] ? presentBest(tags[0]) : null,
});

type SnapshotRow = {
  version: number;
  handle: string;
  trainerStep: number;
  jobId: string | null;
  createdAt: Date;
  supersededAt: Date | null;
  tags: { name: string }[];
};

const presentSnapshot = (s: SnapshotRow): SnapshotVersion => ({
  version: s.version,
  handle: s.handle,
  trainerStep: s.trainerStep,
  jobId: s.jobId,
  createdAt: iso(s.createdAt),
  supersededAt: isoOrNull(s.supersededAt),
  tags: s.tags.map((t) => t.name),
});

type Checkpoints = NonNullable<Awaited<ReturnType<typeof listAdapterCheckpoints>>>;

const presentCheckpoints = ({ teamSlug, adapterId, checkpoints }: Checkpoints): CheckpointInfo[] =>
  checkpoints.map((c) => ({
    name: c.name,
    step: c.step,
    path: formatStatePath({ team: teamSlug, adapter: adapterId, name: c.name }),
    sizeBytes: Number(c.sizeBytes),
    createdAt: iso(c.createdAt),
  }));

const adapterRoute = (method: "GET" | "POST" | "DELETE", path: `/${string}`) =>
  teamRoute(method, path, "adapters");

const adapters = { tag: "adapters", path: "/v1/adapters", what: "adapter", idKey: "adapterId" } as const;

export const adaptersRouter = router({
  create: adapterRoute("POST", "/v1/adapters")
    .input(ZCreateAdapterRequest)
    .output(ZAdapter)
    .mutation(async ({ ctx, input }) =>
      present(await createAdapterWithinQuota(ctx.db, ctx.caller.teamId, input)),
    ),

  ...readProcedures({ ...adapters, output: ZAdapter, list: listAdapters, get: getAdapter, present }),

  delete: deleteProcedure(adapters, deleteAdapter),

  versions: adapterRoute("GET", "/v1/adapters/{adapterId}/versions")
    .input(ZAdapterIdRequest)
    .output(z.array(ZSnapshot))
    .query(async ({ ctx, input }) => {
      const versions = await listAdapterVersions(ctx.db, ctx.caller.teamId, input.adapterId);
      return found(versions, "adapter", input.adapterId).map(presentSnapshot);
    }),

  recentVersions: adapterRoute("GET", "/v1/snapshots/recent")
    .input(ZRecentSnapshotsRequest)
    .output(z.array(ZRecentSnapshot))
    .query(async ({ ctx, input }) =>
      (await listRecentSnapshots(ctx.db, ctx.caller.teamId, input.limit)).map((s) => ({
        ...presentSnapshot(s),
        adapterId: s.adapterId,
        adapterName: s.adapter.name,
      })),
    ),

  latestVersions: adapterRoute("GET", "/v1/snapshots/latest")
    .input(ZRecentSnapshotsRequest)
    .output(z.array(ZAdapterLatestVersion))
    .query(async ({ ctx, input }) =>
      (await listLatestVersions(ctx.db, ctx.caller.teamId, input.limit)).map((entry) => ({
        adapterId: entry.adapterId,
        adapterName: entry.adapterName,
        versions: entry.versions,
        lastPublishedAt: iso(entry.lastPublishedAt),
        latest: presentSnapshot(entry.latest),
      })),
    ),

  checkpoints: adapterRoute("GET", "/v1/adapters/{adapterId}/checkpoints")
    .input(ZAdapterIdRequest)
    .output(z.array(ZCheckpoint))
    .query(async ({ ctx, input }) => {
      const checkpoints = await listAdapterCheckpoints(ctx.db, ctx.caller.teamId, input.adapterId);
      return presentCheckpoints(found(checkpoints, "adapter", input.adapterId));
    }),

  snapshot: adapterRoute("GET", "/v1/snapshots/lookup")
    .input(ZSnapshotLookupRequest)
    .output(ZSnapshotInfo)
    .query(async ({ ctx, input }) => {
      const row = found(
        await snapshotInfo(ctx.db, ctx.caller.teamId, input.handle),
        "snapshot",
        input.handle,
      );
      return { ...presentSnapshot(row), adapterId: row.adapterId, baseModel: row.baseModel };
    }),

  download: adapterRoute("GET", "/v1/snapshots/download")
    .input(ZSnapshotDownloadRequest)
    .output(ZSnapshotFiles)
    .query(async ({ ctx, input }) => {
      const row = await getSnapshotByHandle(ctx.db, ctx.caller.teamId, input.handle);
      const snapshot = found(row, "snapshot", input.handle);
      return { handle: snapshot.handle, files: await readSnapshotFiles(ctx.store, snapshot) };
    }),
});
