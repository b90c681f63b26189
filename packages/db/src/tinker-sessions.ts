// The Tinker SDK's sessions and what hangs off them: the training runs (our
// adapters) and sampling sessions a session created. Every query is within the
// caller's team, so another team's session or sampler answers like a missing one.
import { randomUUID } from "node:crypto";
import type { Db, DbTx } from "./client.ts";
import { QuotaExceededError, UnknownTeamError } from "./errors.ts";
import type { Prisma } from "./generated/prisma/client.ts";
import { lockTeam } from "./team-lock.ts";

/**
 * A session is live while its SDK heartbeats it (every 10 s); one silent this
 * long has ended and no longer counts against the team's maxTinkerSessions.
 */
export const TINKER_SESSION_LIVE_MS = 10 * 60_000;

const liveSince = () => new Date(Date.now() - TINKER_SESSION_LIVE_MS);

export interface NewTinkerSession {
  tags: string[];
  userMetadata: Prisma.InputJsonObject | null;
  sdkVersion: string;
  projectId: string | null;
}

/** Refuses when the team already has maxTinkerSessions live sessions (under the team's lock). */
async function checkSessionQuota(tx: DbTx, teamId: string): Promise<void> {
  const team = await tx.team.findUnique({ where: { id: teamId }, select: { maxTinkerSessions: true } });
  if (!team) throw new UnknownTeamError(`team ${teamId} no longer exists`);
  const live = await tx.tinkerSession.count({ where: { teamId, heartbeatAt: { gt: liveSince() } } });
  if (live >= team.maxTinkerSessions)
    throw new QuotaExceededError(
      `quota exceeded: the team has ${live} live Tinker sessions (maxTinkerSessions is ${team.maxTinkerSessions}); a session ends ${TINKER_SESSION_LIVE_MS / 60_000} minutes after its last heartbeat`,
    );
}

/** A new session of the team, within its quota of live sessions (counted exactly under concurrency). */
export async function createTinkerSession(db: Db, teamId: string, input: NewTinkerSession) {
  const { userMetadata, ...fields } = input;
  return db.$transaction(async (tx) => {
    await lockTeam(tx, "tinker-sessions", teamId);
    await checkSessionQuota(tx, teamId);
    return tx.tinkerSession.create({
      data: { id: randomUUID(), teamId, ...fields, ...(userMetadata === null ? {} : { userMetadata }) },
      select: { id: true },
    });
  });
}

/**
 * A heartbeat of this team's session; false when there is none. A session that
 * had ended comes back only within the quota, as a new one would.
 */
export async function touchTinkerSession(db: Db, teamId: string, id: string): Promise<boolean> {
  const beat = { heartbeatAt: new Date() };
  const live = await db.tinkerSession.updateMany({
    where: { id, teamId, heartbeatAt: { gt: liveSince() } },
    data: beat,
  });
  if (live.count === 1) return true;
  return db.$transaction(async (tx) => {
    await lockTeam(tx, "tinker-sessions", teamId);
    const session = await tx.tinkerSession.findFirst({
      where: { id, teamId },
      select: { heartbeatAt: true },
    });
    if (!session) return false;
    // Another heartbeat may have brought it back meanwhile: then it is live, and counted already.
    if (session.heartbeatAt <= liveSince()) await checkSessionQuota(tx, teamId);
    await tx.tinkerSession.updateMany({ where: { id, teamId }, data: beat });
    return true;
  });
}

/** Whether this team has the session (checked before anything is created under it). */
export async function hasTinkerSession(db: DbTx, teamId: string, id: string): Promise<boolean> {
  return (await db.tinkerSession.count({ where: { id, teamId } })) === 1;
}

/** The team's session ids, newest first, and how many there are. */
export async function listTinkerSessions(db: DbTx, teamId: string, page: { limit: number; offset: number }) {
  const [rows, total] = await Promise.all([
    db.tinkerSession.findMany({
      where: { teamId },
      select: { id: true },
      orderBy: [{ createdAt: "desc" }, { id: "asc" }],
      take: page.limit,
      skip: page.offset,
    }),
    db.tinkerSession.count({ where: { teamId } }),
  ]);
  return { ids: rows.map((r) => r.id), total };
}

/** What a session of this team created, oldest first; null when the team has no such session. */
export async function getTinkerSession(db: DbTx, teamId: string, id: string) {
  const session = await db.tinkerSession.findFirst({
    where: { id, teamId },
    select: {
      runs: { select: { adapterId: true }, orderBy: { createdAt: "asc" } },
      samplers: { select: { id: true }, orderBy: { createdAt: "asc" } },
    },
  });
  if (!session) return null;
  return {
    trainingRunIds: session.runs.map((r) => r.adapterId),
    samplerIds: session.samplers.map((s) => s.id),
  };
}

export async function setTinkerSessionProject(
  db: DbTx,
  teamId: string,
  id: string,
  projectId: string,
): Promise<boolean> {
  const { count } = await db.tinkerSession.updateMany({ where: { id, teamId }, data: { projectId } });
  return count === 1;
}

/** Records that this team's adapter is a training run of a session (or of none), with the user's metadata. */
export async function recordTinkerRun(
  db: DbTx,
  teamId: string,
  run: { adapterId: string; sessionId: string | null; userMetadata: Prisma.InputJsonObject | null },
): Promise<void> {
  const { userMetadata, ...fields } = run;
  await db.tinkerRun.create({
    data: { teamId, ...fields, ...(userMetadata === null ? {} : { userMetadata }) },
    select: { adapterId: true },
  });
}

export interface NewTinkerSampler {
  id: string;
  sessionId: string | null;
  /** The base model by the name the client used. */
  baseModel: string;
  modelPath: string | null;
}

/** Records a sampling session; one created again with the same id (a retried call) is the first one. */
export async function recordTinkerSampler(db: DbTx, teamId: string, sampler: NewTinkerSampler) {
  await db.tinkerSampler.upsert({
    where: { teamId_id: { teamId, id: sampler.id } },
    create: { teamId, ...sampler },
    update: {},
    select: { id: true },
  });
}

export function getTinkerSampler(db: DbTx, teamId: string, id: string) {
  return db.tinkerSampler.findFirst({
    where: { id, teamId },
    select: { id: true, baseModel: true, modelPath: true },
  });
}

/** The requests of the training runs a session of this team created, oldest first (for its trace). */
export async function sessionRequests(db: DbTx, teamId: string, sessionId: string) {
  return db.request.findMany({
    where: { teamId, adapter: { tinkerRun: { sessionId, teamId } } },
    select: {
      id: true,
      adapterId: true,
      kind: true,
      status: true,
      createdAt: true,
      startedAt: true,
      finishedAt: true,
    },
    orderBy: { createdAt: "asc" },
    take: 100_000,
  });
}
