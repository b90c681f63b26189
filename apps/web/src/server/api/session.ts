// The dashboard's session: a sealed, HttpOnly, SameSite=Strict cookie (iron-
// session) holding only the id of a Session row. Every request looks the row up,
// so signing out (the row is deleted) or leaving the team (deleted with the
// membership) ends the session at once, wherever its cookie was copied to.
import type { Caller } from "@opentinker/api";
import { type Db, sessionCaller } from "@opentinker/db";
import { type SessionOptions, unsealData } from "iron-session";
import { z } from "zod";

export const SESSION_COOKIE = "ot_session";
export const SESSION_TTL_SECONDS = 7 * 24 * 3600;

export const ZSessionData = z.object({ sid: z.string().min(1) }).strict();
export type SessionData = z.infer<typeof ZSessionData>;

/**
 * The exact form iron-session seals a cookie in. Its own parser is lenient
 * (it reads "~2junk" as version 2), so anything else is refused before unsealing.
 */
const SEALED =
  /^Fe26\.2\*[0-9]+\*[0-9a-f]{64}\*[A-Za-z0-9_-]+\*[A-Za-z0-9_-]+\*[0-9]*\*[0-9a-f]{64}\*[A-Za-z0-9_-]{43}~2$/;

export function sessionOptions(secret: string, secure = false): SessionOptions {
  return {
    password: secret,
    cookieName: SESSION_COOKIE,
    ttl: SESSION_TTL_SECONDS,
    cookieOptions: { httpOnly: true, sameSite: "strict", secure, path: "/" },
  };
}

/** A cookie's value from a Cookie header; null when absent or given more than once. */
export function cookieValue(header: string | undefined, name: string): string | null {
  const values: string[] = [];
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) values.push(part.slice(eq + 1).trim());
  }
  if (values.length !== 1) return null;
  try {
    return decodeURIComponent(values[0] as string);
  } catch {
    return null;
  }
}

/** The session id a Cookie header carries, when its seal is intact and unexpired; else null. */
export async function sessionIdFromCookie(
  header: string | undefined,
  secret: string,
): Promise<string | null> {
  const sealed = cookieValue(header, SESSION_COOKIE);
  if (!sealed || !SEALED.test(sealed)) return null;
  const data = await unsealData(sealed, { password: secret, ttl: SESSION_TTL_SECONDS }).catch(() => null);
  return ZSessionData.safeParse(data).data?.sid ?? null;
}

/** The caller a session cookie signs in, while its session lives. */
export async function callerFromSessionCookie(
  db: Db,
  cookieHeader: string | undefined,
  secret: string,
): Promise<Caller | null> {
  const sid = await sessionIdFromCookie(cookieHeader, secret);
  const session = sid ? await sessionCaller(db, sid) : null;
  if (!session) return null;
  return {
    teamId: session.teamId,
    teamSlug: session.teamSlug,
    apiKeyId: null,
    sessionId: session.sessionId,
  };
}
