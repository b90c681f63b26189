// The jobs list: one page of a team's jobs in the order asked for, each with
// its adapter's and environment's names and its headline metric.
import { JOB_HEADLINE_METRICS, type JobListRequest, type JobSortKey } from "@opentinker/protocol";
import type { DbTx } from "./client.ts";
import { Prisma } from "./generated/prisma/client.ts";
import { jobSelect } from "./selects.ts";

// Fixed SQL per sort key, never the caller's text. A duration runs to now
// while the job runs; a job that never started has none and sorts last.
const ORDER_BY: Record<JobSortKey, Prisma.Sql> = {
  createdAt: Prisma.sql`j."createdAt"`,
  name: Prisma.sql`j."name"`,
  status: Prisma.sql`j."status"`,
  duration: Prisma.sql`COALESCE(j."finishedAt", now()) - j."startedAt"`,
};

const listSelect = {
  ...jobSelect,
  adapter: { select: { name: true } },
  environment: { select: { name: true } },
} as const;

export interface HeadlineMetric {
  name: string;
  step: number;
  value: number;
}

/** A page of the team's jobs and how many jobs the team has in all. */
export async function listJobPage(db: DbTx, teamId: string, request: JobListRequest) {
  const { sort, direction, page, pageSize } = request;
  const dir = direction === "asc" ? Prisma.sql`ASC` : Prisma.sql`DESC`;
  // Ties (equal names, statuses, durations) go newest first, then by id, so pages never overlap.
  const ids = await db.$queryRaw<{ id: string }[]>`
    SELECT j."id" FROM "Job" j
    WHERE j."teamId" = ${teamId}
    ORDER BY ${ORDER_BY[sort]} ${dir} NULLS LAST, j."createdAt" DESC, j."id" DESC
    LIMIT ${pageSize} OFFSET ${(page - 1) * pageSize}`;
  const total = await db.job.count({ where: { teamId } });
  const rows = await db.job.findMany({
    where: { teamId, id: { in: ids.map((r) => r.id) } },
    select: listSelect,
  });
  const metrics = await headlineMetrics(db, teamId, rows);
  const byId = new Map(rows.map((row) => [row.id, row]));
  const jobs = ids.flatMap(({ id }) => {
    const row = byId.get(id);
    return row ? [{ ...row, metric: metrics.get(id) ?? null }] : [];
  });
  return { total, jobs };
}

/**
 * Each job's newest value of the first of its kind's headline metrics it has
 * recorded (validation before training). One indexed look-up per job and name.
 */
async function headlineMetrics(
  db: DbTx,
  teamId: string,
  jobs: readonly { id: string; kind: keyof typeof JOB_HEADLINE_METRICS }[],
): Promise<Map<string, HeadlineMetric>> {
  const wanted = jobs.flatMap((job) =>
    JOB_HEADLINE_METRICS[job.kind].map((name) => ({ jobId: job.id, name })),
  );
  if (wanted.length === 0) return new Map();
  const found = await db.$queryRaw<{ jobId: string; name: string; step: number; value: number }[]>`
    SELECT k."jobId", k."name", m."step", m."value"
    FROM (VALUES ${Prisma.join(wanted.map((w) => Prisma.sql`(${w.jobId}, ${w.name})`))}) AS k("jobId", "name")
    CROSS JOIN LATERAL (
      SELECT "step", "value" FROM "Metric"
      WHERE "teamId" = ${teamId} AND "jobId" = k."jobId" AND "name" = k."name"
      ORDER BY "step" DESC, "id" DESC
      LIMIT 1
    ) m`;
  const result = new Map<string, HeadlineMetric>();
  for (const job of jobs)
    for (const name of JOB_HEADLINE_METRICS[job.kind]) {
      const hit = found.find((f) => f.jobId === job.id && f.name === name);
      if (hit) {
        result.set(job.id, { name, step: hit.step, value: hit.value });
        break;
      }
    }
  return result;
}
