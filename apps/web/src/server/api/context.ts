import type { IncomingMessage } from "node:http";
import { type Caller, type Context, createInnerContext, ShortCache } from "@opentinker/api";
import { apiKeyCaller, authenticateApiKey, type Db, hashApiKey, type RequestWaiter } from "@opentinker/db";
import type { ObjectStore } from "@opentinker/store";
import { callerFromSessionCookie } from "./session.ts";

/** The token of an `Authorization: Bearer <token>` header. */
export const bearerToken = (header: string | undefined): string | undefined =>
  header ? /^Bearer\s+(\S+)$/i.exec(header)?.[1] : undefined;

/**
 * Recently authenticated keys, so a future's accept and its wait do not each
 * pay a database lookup. Every web process forgets them as soon as the database
 * announces a revocation (access.ts); CACHE_MS bounds a missed announcement.
 */
const CACHE_MS = 5_000;
const recent = new ShortCache<Caller>(CACHE_MS);

export function forgetAuthenticatedKeys(): void {
  recent.clear();
}

/** The team an API key acts for, or null for a missing, unknown or revoked key. */
export async function callerFromApiKey(db: Db, key: string | undefined): Promise<Caller | null> {
  if (!key) return null;
  return recent.through(hashApiKey(key), async () => {
    const found = await authenticateApiKey(db, key);
    return found && { ...found, sessionId: null };
  });
}

/** The team a key acts for, by the key's id (a Tinker JWT names it), or null when it is unknown or revoked. */
export async function callerFromApiKeyId(db: Db, apiKeyId: string): Promise<Caller | null> {
  return recent.through(`id:${apiKeyId}`, async () => {
    const found = await apiKeyCaller(db, apiKeyId);
    return found && { ...found, sessionId: null };
  });
}

/** The caller: `Authorization: Bearer <API key>` for programs, else the dashboard's session cookie. */
export async function callerFromRequest(
  db: Db,
  req: IncomingMessage,
  sessionSecret: string,
): Promise<Caller | null> {
  const token = bearerToken(req.headers.authorization);
  if (token) return callerFromApiKey(db, token);
  return callerFromSessionCookie(db, req.headers.cookie, sessionSecret);
}

export interface ApiDeps {
  db: Db;
  waiter: RequestWaiter;
  /** Seals the dashboard's session cookies (at least 32 characters). */
  sessionSecret: string;
  /** Session cookies are Secure (the service is served over HTTPS). */
  secureCookies?: boolean;
  /** Hosts remote environments may be on (env.ts: OPENTINKER_REMOTE_ENV_HOSTS); none when absent. */
  remoteEnvHosts?: readonly string[];
  /** Where snapshots' files are, for downloads (the store the workers write to). */
  store: ObjectStore;
}

export function contextFactory(deps: ApiDeps) {
  return async ({ req }: { req: IncomingMessage }): Promise<Context> =>
    createInnerContext({
      db: deps.db,
      waiter: deps.waiter,
      caller: await callerFromRequest(deps.db, req, deps.sessionSecret),
      remoteEnvHosts: deps.remoteEnvHosts,
      keyRevoked: forgetAuthenticatedKeys,
      store: deps.store,
    });
}
