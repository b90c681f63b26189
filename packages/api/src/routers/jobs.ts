// Server-side jobs: created with their config (validated per kind), run by a
// worker, followed through their metrics and stored trajectories.
import {
  cancelJob,
  enqueueJob,
  getJob,
  listJobMetrics,
  listJobPage,
  listJobs,
  listJobTrajectories,
  resumeJob,
} from "@opentinker/db";
import {
  type JobInfo,
  type JobInput,
  type JobListItem,
  jobSize,
  ZJob,
  ZJobIdRequest,
  ZJobInput,
  ZJobListRequest,
  ZJobMetric,
  ZJobMetricsRequest,
  ZJobPage,
  ZJobRequest,
  ZJobTrajectoriesRequest,
  ZTrajectory,
} from "@opentinker/protocol";
import { z } from "zod";
import { iso, isoOrNull } from "../present.ts";
import { readProcedures } from "../resource.ts";
import { tokenizerOfBase, tokenPieces } from "../tokenizers.ts";
import { found, router, teamRoute } from "../trpc.ts";

type JobRow = NonNullable<Awaited<ReturnType<typeof getJob>>>;

function present(job: JobRow): JobInfo {
  return {
    id: job.id,
    name: job.name,
    adapterId: job.adapterId,
    environmentId: job.environmentId,
    kind: job.kind,
    config: (job.config ?? {}) as Record<string, unknown>,
    status: job.status,
    step: job.step,
    error: job.error,
    errorClass: job.errorClass,
    faults: job.faults,
    lastFault: job.lastFault,
    waitingFor: job.status === "QUEUED" ? job.waitingFor : null,
    cancelRequested: job.cancelRequestedAt !== null,
    createdAt: iso(job.createdAt),
    startedAt: isoOrNull(job.startedAt),
    finishedAt: isoOrNull(job.finishedAt),
  };
}

type ListedJob = Awaited<ReturnType<typeof listJobPage>>["jobs"][number];

const presentListed = (job: ListedJob): JobListItem => ({
  ...present(job),
  adapterName: job.adapter.name,
  environmentName: job.environment?.name ?? null,
  metric: job.metric,
});

type Trajectories = NonNullable<Awaited<ReturnType<typeof listJobTrajectories>>>;

/** A step's trajectories, with each token as text when asked to decode. */
async function presentTrajectories({ baseModel, trajectories }: Trajectories, decode: boolean) {
  const tokenizer = decode ? await tokenizerOfBase(baseModel) : null;
  return trajectories.map((t) => ({
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
}

/** The snapshot a job's config names, with the field naming it: checked within the team when the job is created. */
function jobSnapshot(input: JobInput): { snapshot?: { handle: string; field: string } } {
  if (input.kind === "EVAL" && input.config.handle)
    return { snapshot: { handle: input.config.handle, field: "config.handle" } };
  if (input.kind === "RL" && input.config.referenceModel)
    return { snapshot: { handle: input.config.referenceModel, field: "config.referenceModel" } };
  return {};
}

const jobRoute = (method: "GET" | "POST", path: `/${string}`) => teamRoute(method, path, "jobs");

export const jobsRouter = router({
  create: jobRoute("POST", "/v1/jobs")
    .input(ZJobRequest)
    .output(ZJob)
    .mutation(async ({ ctx, input: request }) => {
      const input = ZJobInput.parse(request);
      const job = await enqueueJob(ctx.db, ctx.caller.teamId, {
        ...(input.name ? { name: input.name } : {}),
        adapterId: input.adapterId,
        kind: input.kind,
        config: input.config as object,
        size: jobSize(input),
        ...("environmentId" in input ? { environmentId: input.environmentId } : {}),
        ...jobSnapshot(input),
      });
      return present(job);
    }),

  ...readProcedures({
    tag: "jobs",
    path: "/v1/jobs",
    what: "job",
    idKey: "jobId",
    output: ZJob,
    list: listJobs,
    get: getJob,
    present,
  }),

  // Its own path: under /v1/jobs/ it would read as a job's id.
  page: jobRoute("GET", "/v1/job-list")
    .input(ZJobListRequest)
    .output(ZJobPage)
    .query(async ({ ctx, input }) => {
      const { total, jobs } = await listJobPage(ctx.db, ctx.caller.teamId, input);
      return { total, page: input.page, pageSize: input.pageSize, jobs: jobs.map(presentListed) };
    }),

  cancel: jobRoute("POST", "/v1/jobs/{jobId}/cancel")
    .input(ZJobIdRequest)
    .output(ZJob)
    .mutation(async ({ ctx, input }) =>
      present(found(await cancelJob(ctx.db, ctx.caller.teamId, input.jobId), "job", input.jobId)),
    ),

  resume: jobRoute("POST", "/v1/jobs/{jobId}/resume")
    .input(ZJobIdRequest)
    .output(ZJob)
    .mutation(async ({ ctx, input }) =>
      present(found(await resumeJob(ctx.db, ctx.caller.teamId, input.jobId), "job", input.jobId)),
    ),

  metrics: jobRoute("GET", "/v1/jobs/{jobId}/metrics")
    .input(ZJobMetricsRequest)
    .output(z.array(ZJobMetric))
    .query(async ({ ctx, input }) => {
      const metrics = await listJobMetrics(ctx.db, ctx.caller.teamId, input.jobId, input.sinceStep);
      return found(metrics, "job", input.jobId).map(({ step, name, value }) => ({ step, name, value }));
    }),

  trajectories: jobRoute("GET", "/v1/jobs/{jobId}/trajectories")
    .input(ZJobTrajectoriesRequest)
    .output(z.array(ZTrajectory))
    .query(async ({ ctx, input }) => {
      const stored = await listJobTrajectories(ctx.db, ctx.caller.teamId, input.jobId, input.step);
      return presentTrajectories(found(stored, "job", input.jobId), input.decode);
    }),
});
