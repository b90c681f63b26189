import {
  createAdapter,
  deleteAdapter,
  getAdapter,
  listAdapters,
  listSnapshots,
  QuotaExceededError,
  snapshotInfo,
} from "@opentinker/db";
import { ZSamplerHandle } from "@opentinker/protocol";
import { z } from "zod";
import { badRequest, notFound, router, teamProcedure } from "../init.ts";
import { iso, isoOrNull } from "../serialize.ts";
import { readSnapshotFiles } from "./snapshot-files.ts";

const ZAdapter = z.object({
  id: z.string(),
  name: z.string(),
  baseModel: z.string(),
  kind: z.enum(["LORA", "FULL"]),
  rank: z.number().nullable(),
  alpha: z.number().nullable(),
  trainAttn: z.boolean(),
  trainMlp: z.boolean(),
  trainUnembed: z.boolean(),
  seed: z.number(),
  status: z.enum(["ACTIVE", "ARCHIVED"]),
  step: z.number(),
  createdAt: z.string(),
});

const ZAdapterId = z.object({ adapterId: z.string().min(1) });

const ZCreateAdapter = z
  .object({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-'"),
    baseModel: z.string().min(1),
    kind: z.enum(["LORA", "FULL"]).default("LORA"),
    rank: z.number().int().min(1).max(1024).default(8),
    alpha: z.number().positive().finite().default(32),
    trainAttn: z.boolean().default(true),
    trainMlp: z.boolean().default(true),
    trainUnembed: z.boolean().default(false),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .default(0),
  })
  .strict();

type AdapterRow = NonNullable<Awaited<ReturnType<typeof getAdapter>>>;

async function present(ctx: { db: import("@opentinker/db").Db }, rows: AdapterRow[]) {
  const bases = new Map(
    (await ctx.db.baseModel.findMany({ select: { id: true, name: true } })).map((b) => [b.id, b.name]),
  );
  return rows.map((a) => ({
    id: a.id,
    name: a.name,
    baseModel: bases.get(a.baseModelId) ?? a.baseModelId,
    kind: a.kind,
    rank: a.rank,
    alpha: a.alpha,
    trainAttn: a.trainAttn,
    trainMlp: a.trainMlp,
    trainUnembed: a.trainUnembed,
    seed: a.seed,
    status: a.status,
    step: a.step,
    createdAt: iso(a.createdAt),
  }));
}

const ZSnapshot = z.object({
  version: z.number(),
  handle: z.string(),
  trainerStep: z.number(),
  jobId: z.string().nullable(),
  createdAt: z.string(),
  /**
   * When the training state that produced this version was lost and its job
   * resumed from an earlier checkpoint: no surviving state has these weights
   * (they stay loadable). Null for a version on the adapter's current line.
   */
  supersededAt: z.string().nullable(),
});

type SnapshotRow = {
  version: number;
  handle: string;
  trainerStep: number;
  jobId: string | null;
  createdAt: Date;
  supersededAt: Date | null;
};

const presentSnapshot = (s: SnapshotRow): z.infer<typeof ZSnapshot> => ({
  version: s.version,
  handle: s.handle,
  trainerStep: s.trainerStep,
  jobId: s.jobId,
  createdAt: iso(s.createdAt),
  supersededAt: isoOrNull(s.supersededAt),
});
const ZRecentSnapshot = ZSnapshot.extend({ adapterId: z.string(), adapterName: z.string() });
const ZCheckpoint = z.object({
  name: z.string(),
  step: z.number(),
  path: z.string(),
  sizeBytes: z.number(),
  createdAt: z.string(),
});

export const adaptersRouter = router({
  create: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/adapters", protect: true, tags: ["adapters"] } })
    .input(ZCreateAdapter)
    .output(ZAdapter)
    .mutation(async ({ ctx, input }) => {
      const base = await ctx.db.baseModel.findUnique({ where: { name: input.baseModel } });
      if (!base) badRequest(`baseModel: unknown base model "${input.baseModel}"`);
      const created = await ctx.db.$transaction(async (tx) => {
        const team = await tx.team.findUniqueOrThrow({ where: { id: ctx.caller.teamId } });
        // Serialises concurrent creations of one team, so the quota holds exactly.
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtext(${`adapters:${team.id}`}))`;
        const count = await tx.adapter.count({ where: { teamId: team.id, status: "ACTIVE" } });
        if (count >= team.maxAdapters)
          throw new QuotaExceededError(
            `quota exceeded: the team has ${count} adapters (maxAdapters is ${team.maxAdapters})`,
          );
        const { baseModel: _name, ...rest } = input;
        return createAdapter(tx, team.id, {
          ...rest,
          baseModelId: base.id,
          ...(input.kind === "FULL" ? { rank: undefined, alpha: undefined } : {}),
        });
      });
      return (await present(ctx, [created]))[0] as z.infer<typeof ZAdapter>;
    }),

  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/adapters", protect: true, tags: ["adapters"] } })
    .input(z.object({}))
    .output(z.array(ZAdapter))
    .query(async ({ ctx }) => present(ctx, await listAdapters(ctx.db, ctx.caller.teamId))),

  get: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/adapters/{adapterId}", protect: true, tags: ["adapters"] } })
    .input(ZAdapterId)
    .output(ZAdapter)
    .query(async ({ ctx, input }) => {
      const row = await getAdapter(ctx.db, ctx.caller.teamId, input.adapterId);
      if (!row) notFound("adapter", input.adapterId);
      return (await present(ctx, [row]))[0] as z.infer<typeof ZAdapter>;
    }),

  delete: teamProcedure
    .meta({
      openapi: { method: "DELETE", path: "/v1/adapters/{adapterId}", protect: true, tags: ["adapters"] },
    })
    .input(ZAdapterId)
    .output(z.object({ deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      if (!(await deleteAdapter(ctx.db, ctx.caller.teamId, input.adapterId)))
        notFound("adapter", input.adapterId);
      return { deleted: true as const };
    }),

  versions: teamProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/v1/adapters/{adapterId}/versions",
        protect: true,
        tags: ["adapters"],
      },
    })
    .input(ZAdapterId)
    .output(z.array(ZSnapshot))
    .query(async ({ ctx, input }) => {
      if (!(await getAdapter(ctx.db, ctx.caller.teamId, input.adapterId)))
        notFound("adapter", input.adapterId);
      return (await listSnapshots(ctx.db, ctx.caller.teamId, input.adapterId)).map(presentSnapshot);
    }),

  recentVersions: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/snapshots/recent", protect: true, tags: ["adapters"] } })
    .input(z.object({ limit: z.number().int().min(1).max(100).default(10) }))
    .output(z.array(ZRecentSnapshot))
    .query(async ({ ctx, input }) => {
      const rows = await ctx.db.snapshot.findMany({
        where: { teamId: ctx.caller.teamId },
        orderBy: { createdAt: "desc" },
        take: input.limit,
        include: { adapter: { select: { name: true } } },
      });
      return rows.map((s) => ({
        ...presentSnapshot(s),
        adapterId: s.adapterId,
        adapterName: s.adapter.name,
      }));
    }),

  checkpoints: teamProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/v1/adapters/{adapterId}/checkpoints",
        protect: true,
        tags: ["adapters"],
      },
    })
    .input(ZAdapterId)
    .output(z.array(ZCheckpoint))
    .query(async ({ ctx, input }) => {
      const adapter = await ctx.db.adapter.findFirst({
        where: { id: input.adapterId, teamId: ctx.caller.teamId },
        select: { id: true, team: { select: { slug: true } } },
      });
      if (!adapter) notFound("adapter", input.adapterId);
      const rows = await ctx.db.checkpoint.findMany({
        where: { teamId: ctx.caller.teamId, adapterId: adapter.id },
        orderBy: [{ step: "asc" }, { createdAt: "asc" }],
      });
      return rows.map((c) => ({
        name: c.name,
        step: c.step,
        path: `opentinker://${adapter.team.slug}/${adapter.id}/state/${c.name}`,
        sizeBytes: Number(c.sizeBytes),
        createdAt: iso(c.createdAt),
      }));
    }),

  snapshot: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/snapshots/lookup", protect: true, tags: ["adapters"] } })
    .input(z.object({ handle: ZSamplerHandle }))
    .output(ZSnapshot.extend({ adapterId: z.string(), baseModel: z.string() }))
    .query(async ({ ctx, input }) => {
      const row = await snapshotInfo(ctx.db, ctx.caller.teamId, input.handle);
      if (!row) notFound("snapshot", input.handle);
      return { ...presentSnapshot(row), adapterId: row.adapterId, baseModel: row.baseModel };
    }),

  download: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/snapshots/download", protect: true, tags: ["adapters"] } })
    .input(z.object({ handle: z.string().min(1) }))
    .output(z.object({ handle: z.string(), files: z.record(z.string(), z.string()) }))
    .query(async ({ ctx, input }) => {
      const row = await ctx.db.snapshot.findFirst({
        where: { teamId: ctx.caller.teamId, handle: input.handle },
      });
      if (!row) notFound("snapshot", input.handle);
      return { handle: row.handle, files: await readSnapshotFiles(row.path) };
    }),
});
