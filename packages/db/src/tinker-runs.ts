// Training runs as the Tinker protocol lists them: the team's adapters (unloaded
// ones too), with
// the session and metadata the Tinker front recorded, the time of their last
// request and their newest saved weights of each kind.
import type { DbTx } from "./client.ts";
import { latestSavedWeights, type SavedWeightsRow } from "./tinker-checkpoints.ts";

const runSelect = {
  id: true,
  kind: true,
  rank: true,
  trainAttn: true,
  trainMlp: true,
  trainUnembed: true,
  status: true,
  createdAt: true,
  updatedAt: true,
  baseModel: { select: { name: true } },
  team: { select: { slug: true } },
  tinkerRun: { select: { userMetadata: true, sessionId: true } },
} as const;

export interface TrainingRunRow {
  id: string;
  kind: "LORA" | "FULL";
  rank: number | null;
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
  baseModel: string;
  owner: string;
  userMetadata: unknown;
  /** The Tinker session that created it, if one did. */
  sessionId: string | null;
  /** Unloaded runs take no more training calls. */
  active: boolean;
  lastRequestAt: Date;
  lastCheckpoint: SavedWeightsRow | null;
  lastSamplerCheckpoint: SavedWeightsRow | null;
}

async function withActivity(db: DbTx, teamId: string, runs: Awaited<ReturnType<typeof findRuns>>) {
  const ids = runs.map((r) => r.id);
  const [last, saved] = await Promise.all([
    ids.length === 0
      ? []
      : db.request.groupBy({
          by: ["adapterId"],
          where: { teamId, adapterId: { in: ids } },
          _max: { createdAt: true },
        }),
    latestSavedWeights(db, teamId, ids),
  ]);
  const lastAt = new Map(last.map((l) => [l.adapterId, l._max.createdAt]));
  return runs.map(
    (r): TrainingRunRow => ({
      id: r.id,
      kind: r.kind,
      rank: r.rank,
      trainAttn: r.trainAttn,
      trainMlp: r.trainMlp,
      trainUnembed: r.trainUnembed,
      baseModel: r.baseModel.name,
      owner: r.team.slug,
      userMetadata: r.tinkerRun?.userMetadata ?? null,
      sessionId: r.tinkerRun?.sessionId ?? null,
      active: r.status === "ACTIVE",
      lastRequestAt: lastAt.get(r.id) ?? r.updatedAt,
      lastCheckpoint: saved.find((s) => s.adapterId === r.id && s.kind === "training") ?? null,
      lastSamplerCheckpoint: saved.find((s) => s.adapterId === r.id && s.kind === "sampler") ?? null,
    }),
  );
}

function findRuns(
  db: DbTx,
  teamId: string,
  where: { id?: string },
  page?: { limit: number; offset: number },
) {
  return db.adapter.findMany({
    where: { teamId, ...where },
    select: runSelect,
    orderBy: [{ createdAt: "desc" }, { id: "asc" }],
    ...(page ? { take: page.limit, skip: page.offset } : {}),
  });
}

/** The team's training runs, newest first, and how many there are. */
export async function listTrainingRuns(db: DbTx, teamId: string, page: { limit: number; offset: number }) {
  const [runs, total] = await Promise.all([
    findRuns(db, teamId, {}, page),
    db.adapter.count({ where: { teamId } }),
  ]);
  return { runs: await withActivity(db, teamId, runs), total };
}

/** One training run of the team, or null. */
export async function getTrainingRun(db: DbTx, teamId: string, adapterId: string) {
  const runs = await findRuns(db, teamId, { id: adapterId });
  return runs.length === 0 ? null : ((await withActivity(db, teamId, runs))[0] ?? null);
}
