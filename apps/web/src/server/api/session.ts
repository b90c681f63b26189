// The dashboard's session: a sealed, HttpOnly, SameSite=Strict cookie (iron-
// session) holding the signed-in user and the team they are acting for. Every
// request re-checks the membership, so removing a member ends their access.
import type { IncomingMessage } from "node:http";
import type { Db } from "@opentinker/db";
import { type SessionOptions, unsealData } from "iron-session";
import { z } from "zod";
import type { Caller } from "../trpc/init.ts";

export const SESSION_COOKIE = "ot_session";
const TTL_SECONDS = 7 * 24 * 3600;

export const ZSessionData = z.object({ userId: z.string(), teamId: z.string() });
export type SessionData = z.infer<typeof ZSessionData>;

export function sessionOptions(secret: string): SessionOptions {
  return {
    password: secret,
    cookieName: SESSION_COOKIE,
    ttl: TTL_SECONDS,
    cookieOptions: {
      httpOnly: true,
      sameSite: "strict",
      secure: process.env.OPENTINKER_SECURE_COOKIES === "1",
      path: "/",
    },
  };
}

/** A cookie's value from a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return undefined;
}

/** The caller a session cookie signs in, while the user is still a member of the team. */
export async function callerFromSessionCookie(
  db: Db,
  cookieHeader: string | undefined,
  secret: string,
): Promise<Caller | null> {
  const sealed = cookieValue(cookieHeader, SESSION_COOKIE);
  if (!sealed) return null;
  const data = ZSessionData.safeParse(
    await unsealData(sealed, { password: secret, ttl: TTL_SECONDS }).catch(() => ({})),
  );
  if (!data.success) return null;
  const membership = await db.membership.findUnique({
    where: { teamId_userId: { teamId: data.data.teamId, userId: data.data.userId } },
    select: { team: { select: { id: true, slug: true } } },
  });
  return membership ? { teamId: membership.team.id, teamSlug: membership.team.slug, apiKeyId: null } : null;
}

export function callerFromSessionRequest(
  db: Db,
  req: IncomingMessage,
  secret: string,
): Promise<Caller | null> {
  return callerFromSessionCookie(db, req.headers.cookie, secret);
}
