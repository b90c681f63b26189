// Dashboard sessions (server side): the sealed cookie carries only a session's
// id; the row says which user acts for which team until when. Signing out
// deletes it, and so does removing the membership (its foreign key cascades),
// so a copied cookie is worthless afterwards.
import { randomBytes } from "node:crypto";
import type { DbTx } from "./client.ts";

export interface SessionCaller {
  sessionId: string;
  userId: string;
  teamId: string;
  teamSlug: string;
}

/** Starts a session of a member acting for one of their teams. */
export async function createSession(
  db: DbTx,
  input: { userId: string; teamId: string; ttlSeconds: number },
): Promise<string> {
  const id = randomBytes(32).toString("base64url");
  const expiresAt = new Date(Date.now() + input.ttlSeconds * 1000);
  await db.session.create({ data: { id, userId: input.userId, teamId: input.teamId, expiresAt } });
  return id;
}

/** Who a live session acts for, or null (signed out, expired, or no longer a member). */
export async function sessionCaller(db: DbTx, sessionId: string): Promise<SessionCaller | null> {
  const row = await db.session.findFirst({
    where: { id: sessionId, expiresAt: { gt: new Date() } },
    select: { userId: true, membership: { select: { team: { select: { id: true, slug: true } } } } },
  });
  if (!row) return null;
  const { team } = row.membership;
  return { sessionId, userId: row.userId, teamId: team.id, teamSlug: team.slug };
}

/** Moves a session to another of its user's teams; false when the user is not a member of it. */
export async function switchSessionTeam(db: DbTx, sessionId: string, teamId: string): Promise<boolean> {
  const session = await db.session.findUnique({ where: { id: sessionId }, select: { userId: true } });
  if (!session) return false;
  const member = await db.membership.findUnique({
    where: { teamId_userId: { teamId, userId: session.userId } },
    select: { id: true },
  });
  if (!member) return false;
  await db.session.update({ where: { id: sessionId }, data: { teamId } });
  return true;
}

/** Ends a session (sign-out); ending one that is gone already is fine. */
export async function endSession(db: DbTx, sessionId: string): Promise<void> {
  await db.session.deleteMany({ where: { id: sessionId } });
}

/** A user with the teams they belong to and their role in each (what the dashboard's session shows). */
export function userWithTeams(db: DbTx, userId: string) {
  return db.user.findUnique({
    where: { id: userId },
    select: {
      id: true,
      email: true,
      name: true,
      memberships: { select: { role: true, team: { select: { id: true, slug: true, name: true } } } },
    },
  });
}
