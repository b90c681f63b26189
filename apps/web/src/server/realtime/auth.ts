// Who a Socket.IO connection acts for, resolved once from its handshake.
import type { IncomingHttpHeaders } from "node:http";
import type { Caller } from "@opentinker/api";
import type { Db } from "@opentinker/db";
import { z } from "zod";
import { bearerToken, callerFromApiKey } from "../api/context.ts";
import { callerFromSessionCookie } from "../api/session.ts";

/** The parts of a Socket.IO handshake that can carry credentials. */
export interface SocketHandshake {
  auth: Record<string, unknown>;
  headers: IncomingHttpHeaders;
}

/** One way to authenticate a handshake: null when it does not apply or fails. */
type CallerResolver = (db: Db, handshake: SocketHandshake, sessionSecret: string) => Promise<Caller | null>;

export const UNAUTHENTICATED_MESSAGE =
  "missing, unknown or revoked API key: connect with auth { apiKey: <key> } or an Authorization: Bearer <key> header";

const ZAuthApiKey = z.object({ apiKey: z.string().min(1) });

// Tried in order; the dashboard's cookie session will be one more entry here.
const resolvers: CallerResolver[] = [
  // Browsers cannot set headers on a WebSocket, so the key may come in `auth`.
  (db, handshake) => callerFromApiKey(db, ZAuthApiKey.safeParse(handshake.auth).data?.apiKey),
  (db, handshake) => callerFromApiKey(db, bearerToken(handshake.headers.authorization)),
  // The dashboard: its session cookie (SameSite=Strict, so only our own pages send it).
  (db, handshake, secret) => callerFromSessionCookie(db, handshake.headers.cookie, secret),
];

/** The caller a handshake authenticates as, or null. */
export async function resolveSocketCaller(
  db: Db,
  handshake: SocketHandshake,
  sessionSecret: string,
): Promise<Caller | null> {
  for (const resolve of resolvers) {
    const caller = await resolve(db, handshake, sessionSecret);
    if (caller) return caller;
  }
  return null;
}
