// The Tinker SDK's sessions and what hangs off them: the training runs (our
// adapters) and sampling sessions a session created. Every query is within the
// caller's team, so another team's session or sampler answers like a missing one.
import { randomUUID } from "node:crypto";
import type { DbTx } from "./client.ts";
import type { Prisma } from "./generated/prisma/client.ts";

export interface NewTinkerSession {
  tags: string[];
  userMetadata: Prisma.InputJsonObject | null;
  sdkVersion: string;
  projectId: string | null;
}

export async function createTinkerSession(db: DbTx, teamId: string, input: NewTinkerSession) {
  const { userMetadata, ...fields } = input;
  return db.tinkerSession.create({
    data: { id: randomUUID(), teamId, ...fields, ...(userMetadata === null ? {} : { userMetadata }) },
    select: { id: true },
  });
}

/** A heartbeat of this team's session; false when there is none. */
export async function touchTinkerSession(db: DbTx, teamId: string, id: string): Promise<boolean> {
  const { count } = await db.tinkerSession.updateMany({
    where: { id, teamId },
    data: { heartbeatAt: new Date() },
  });
  return count === 1;
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
