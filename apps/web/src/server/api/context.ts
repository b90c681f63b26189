import type { IncomingMessage } from "node:http";
import { authenticateApiKey, type Db, type RequestWaiter } from "@opentinker/db";
import type { Caller, Context } from "../trpc/init.ts";

/** The caller named by `Authorization: Bearer <API key>`, or null. */
export async function callerFromRequest(db: Db, req: IncomingMessage): Promise<Caller | null> {
  const header = req.headers.authorization;
  const match = header ? /^Bearer\s+(\S+)$/i.exec(header) : null;
  if (!match?.[1]) return null;
  const auth = await authenticateApiKey(db, match[1]);
  if (!auth) return null;
  const team = await db.team.findUnique({ where: { id: auth.teamId }, select: { slug: true } });
  return team ? { teamId: auth.teamId, teamSlug: team.slug, apiKeyId: auth.apiKeyId } : null;
}

export interface ApiDeps {
  db: Db;
  waiter: RequestWaiter;
}

export function contextFactory(deps: ApiDeps) {
  return async ({ req }: { req: IncomingMessage }): Promise<Context> => ({
    db: deps.db,
    waiter: deps.waiter,
    caller: await callerFromRequest(deps.db, req),
  });
}
