import type { DbTx } from "./client.ts";

/** Records a step's metrics of a job; non-finite values are rejected by name. */
export async function recordMetrics(
  db: DbTx,
  teamId: string,
  jobId: string,
  step: number,
  values: Record<string, number>,
): Promise<void> {
  const data = Object.entries(values).map(([name, value]) => {
    if (!Number.isFinite(value)) throw new RangeError(`recordMetrics: metric ${name} is ${value}`);
    return { teamId, jobId, step, name, value };
  });
  await db.metric.createMany({ data });
}

export function listMetrics(db: DbTx, teamId: string, jobId: string, sinceStep = 0) {
  return db.metric.findMany({
    where: { teamId, jobId, step: { gte: sinceStep } },
    select: { step: true, name: true, value: true, createdAt: true },
    orderBy: [{ step: "asc" }, { name: "asc" }],
  });
}
