// Server-side jobs: created with their config (validated per kind), run by a
// worker, followed through their metrics and stored trajectories.
import {
  enqueueJob,
  getJob,
  listJobs,
  listMetrics,
  listTrajectories,
  requestJobCancel,
} from "@opentinker/db";
import { jobSize, ZJobInput, ZJobRequest } from "@opentinker/protocol";
import { z } from "zod";
import { tokenizerOfBase, tokenPieces } from "../../tokenizers.ts";
import { notFound, router, teamProcedure } from "../init.ts";
import { iso, isoOrNull } from "../serialize.ts";

const ZJob = z.object({
  id: z.string(),
  adapterId: z.string(),
  environmentId: z.string().nullable(),
  kind: z.enum(["SFT", "RL", "EVAL"]),
  config: z.record(z.string(), z.unknown()),
  status: z.enum(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]),
  step: z.number(),
  error: z.string().nullable(),
  cancelRequested: z.boolean(),
  createdAt: z.string(),
  startedAt: z.string().nullable(),
  finishedAt: z.string().nullable(),
});

type JobRow = NonNullable<Awaited<ReturnType<typeof getJob>>>;

function present(job: JobRow): z.infer<typeof ZJob> {
  return {
    id: job.id,
    adapterId: job.adapterId,
    environmentId: job.environmentId,
    kind: job.kind,
    config: (job.config ?? {}) as Record<string, unknown>,
    status: job.status,
    step: job.step,
    error: job.error,
    cancelRequested: job.cancelRequestedAt !== null,
    createdAt: iso(job.createdAt),
    startedAt: isoOrNull(job.startedAt),
    finishedAt: isoOrNull(job.finishedAt),
  };
}

const ZJobId = z.object({ jobId: z.string().min(1) });

const ZTrajectory = z.object({
  id: z.string(),
  step: z.number(),
  groupIndex: z.number(),
  sampleIndex: z.number(),
  player: z.number(),
  snapshotVersion: z.number(),
  staleness: z.number(),
  status: z.enum(["OK", "FAILED"]),
  failureReason: z.string().nullable(),
  reward: z.number(),
  tokens: z.array(z.number()),
  /** With decode: each token as text. */
  pieces: z.array(z.string()).optional(),
  mask: z.array(z.number()),
  logprobs: z.array(z.number()),
  advantages: z.array(z.number()),
});

export const jobsRouter = router({
  create: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/jobs", protect: true, tags: ["jobs"] } })
    .input(ZJobRequest)
    .output(ZJob)
    .mutation(async ({ ctx, input: request }) => {
      const input = ZJobInput.parse(request);
      return present(
        await enqueueJob(ctx.db, ctx.caller.teamId, {
          adapterId: input.adapterId,
          kind: input.kind,
          config: input.config as object,
          size: jobSize(input),
          ...("environmentId" in input ? { environmentId: input.environmentId } : {}),
          ...(input.kind === "EVAL" && input.config.handle ? { handle: input.config.handle } : {}),
        }),
      );
    }),

  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/jobs", protect: true, tags: ["jobs"] } })
    .input(z.object({}))
    .output(z.array(ZJob))
    .query(async ({ ctx }) => (await listJobs(ctx.db, ctx.caller.teamId)).map(present)),

  get: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/jobs/{jobId}", protect: true, tags: ["jobs"] } })
    .input(ZJobId)
    .output(ZJob)
    .query(async ({ ctx, input }) => {
      const job = await getJob(ctx.db, ctx.caller.teamId, input.jobId);
      if (!job) notFound("job", input.jobId);
      return present(job);
    }),

  cancel: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/jobs/{jobId}/cancel", protect: true, tags: ["jobs"] } })
    .input(ZJobId)
    .output(ZJob)
    .mutation(async ({ ctx, input }) => {
      const job = await getJob(ctx.db, ctx.caller.teamId, input.jobId);
      if (!job) notFound("job", input.jobId);
      await requestJobCancel(ctx.db, ctx.caller.teamId, input.jobId);
      return present((await getJob(ctx.db, ctx.caller.teamId, input.jobId)) ?? job);
    }),

  metrics: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/jobs/{jobId}/metrics", protect: true, tags: ["jobs"] } })
    .input(ZJobId.extend({ sinceStep: z.number().int().min(0).default(0) }))
    .output(z.array(z.object({ step: z.number(), name: z.string(), value: z.number() })))
    .query(async ({ ctx, input }) => {
      if (!(await getJob(ctx.db, ctx.caller.teamId, input.jobId))) notFound("job", input.jobId);
      return (await listMetrics(ctx.db, ctx.caller.teamId, input.jobId, input.sinceStep)).map(
        ({ step, name, value }) => ({
          step,
          name,
          value,
        }),
      );
    }),

  trajectories: teamProcedure
    .meta({
      openapi: { method: "GET", path: "/v1/jobs/{jobId}/trajectories", protect: true, tags: ["jobs"] },
    })
    .input(ZJobId.extend({ step: z.number().int().min(0), decode: z.boolean().default(false) }))
    .output(z.array(ZTrajectory))
    .query(async ({ ctx, input }) => {
      const job = await ctx.db.job.findFirst({
        where: { id: input.jobId, teamId: ctx.caller.teamId },
        select: { adapter: { select: { baseModelId: true } } },
      });
      if (!job) notFound("job", input.jobId);
      const tokenizer = input.decode ? await tokenizerOfBase(ctx.db, job.adapter.baseModelId) : null;
      return (await listTrajectories(ctx.db, ctx.caller.teamId, input.jobId, input.step)).map((t) => ({
        ...(tokenizer ? { pieces: tokenPieces(tokenizer, [...t.tokens]) } : {}),
        id: String(t.id),
        step: t.step,
        groupIndex: t.groupIndex,
        sampleIndex: t.sampleIndex,
        player: t.player,
        snapshotVersion: t.snapshotVersion,
        staleness: t.staleness,
        status: t.status,
        failureReason: t.failureReason,
        reward: t.reward,
        tokens: [...t.tokens],
        mask: [...t.mask],
        logprobs: [...t.logprobs],
        advantages: [...t.advantages],
      }));
    }),
});
