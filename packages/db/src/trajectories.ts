import type { DbTx } from "./client.ts";
import { decodeTrajectoryArrays, encodeTrajectoryArrays, type TrajectoryArrays } from "./trajectory-codec.ts";

export interface TrajectoryInput extends TrajectoryArrays {
  step: number;
  groupIndex: number;
  sampleIndex: number;
  player?: number;
  snapshotVersion: number;
  staleness?: number;
  reward: number;
  failureReason?: string;
}

/**
 * Stores a batch of trajectories of one job in one statement. The unique key
 * (job, step, group, sample, player) means a retried step cannot duplicate rows:
 * those already stored are skipped. Returns how many rows were new.
 */
export async function insertTrajectories(
  db: DbTx,
  teamId: string,
  jobId: string,
  trajectories: TrajectoryInput[],
): Promise<number> {
  const data = trajectories.map((t) => {
    if (!Number.isFinite(t.reward)) throw new RangeError(`insertTrajectories: reward is ${t.reward}`);
    const { tokens, mask, logprobs, advantages, failureReason, ...fields } = t;
    return {
      ...fields,
      ...encodeTrajectoryArrays({ tokens, mask, logprobs, advantages }),
      status: failureReason === undefined ? ("OK" as const) : ("FAILED" as const),
      failureReason: failureReason ?? null,
      teamId,
      jobId,
    };
  });
  const { count } = await db.trajectory.createMany({ data, skipDuplicates: true });
  return count;
}

/** A job's trajectories of one step, decoded; empty for another team's job. */
export async function listTrajectories(db: DbTx, teamId: string, jobId: string, step: number) {
  const rows = await db.trajectory.findMany({
    where: { teamId, jobId, step },
    orderBy: [{ groupIndex: "asc" }, { sampleIndex: "asc" }, { player: "asc" }],
  });
  return rows.map(({ tokens, mask, logprobs, advantages, tokenCount, ...rest }) => ({
    ...rest,
    tokenCount,
    ...decodeTrajectoryArrays({ tokenCount, tokens, mask, logprobs, advantages }),
  }));
}
