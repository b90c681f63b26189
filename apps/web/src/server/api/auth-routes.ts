// Dashboard sign-in: /api/auth/sign-in, /sign-out, /session and /team (switch the
// team the session acts for). API keys are for programs; this is for people.
import type { IncomingMessage, ServerResponse } from "node:http";
import {
  createSession,
  type Db,
  endSession,
  type SessionCaller,
  sessionCaller,
  signIn,
  switchSessionTeam,
  userWithTeams,
} from "@opentinker/db";
import { getIronSession } from "iron-session";
import { z } from "zod";
import { HttpError, readJsonBody } from "./body.ts";
import { SESSION_TTL_SECONDS, type SessionData, sessionIdFromCookie, sessionOptions } from "./session.ts";

const ZSignIn = z
  .object({
    email: z.string().min(1).max(320),
    password: z.string().min(1).max(1024),
    teamSlug: z.string().min(1).max(128).optional(),
  })
  .strict();
const ZSwitchTeam = z.object({ teamId: z.string().min(1).max(64) }).strict();
const ZEmpty = z.object({}).strict();

function send(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("cache-control", "no-store");
  res.end(JSON.stringify(body));
}

async function describeSession(db: Db, session: Pick<SessionCaller, "userId" | "teamId">) {
  const user = await userWithTeams(db, session.userId);
  if (!user) return null;
  const team = user.memberships.find((m) => m.team.id === session.teamId)?.team;
  if (!team) return null;
  const teams = user.memberships.map((m) => ({ ...m.team, role: m.role }));
  return { user: { id: user.id, email: user.email, name: user.name }, team, teams };
}

async function parse<T>(schema: z.ZodType<T>, req: IncomingMessage): Promise<T> {
  const parsed = schema.safeParse(await readJsonBody(req));
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new HttpError(400, `${issue?.path.join(".") || "body"}: ${issue?.message}`);
}

type Route = (req: IncomingMessage, res: ServerResponse) => Promise<void>;

export function createAuthHandler(deps: { db: Db; sessionSecret: string; secureCookies?: boolean }) {
  const options = sessionOptions(deps.sessionSecret, deps.secureCookies);
  const current = async (req: IncomingMessage) => {
    const sid = await sessionIdFromCookie(req.headers.cookie, deps.sessionSecret);
    return sid ? sessionCaller(deps.db, sid) : null;
  };
  const routes: Record<string, Route> = {
    "POST /api/auth/sign-in": async (req, res) => {
      const input = await parse(ZSignIn, req);
      const user = await signIn(deps.db, input.email, input.password);
      if (!user) return send(res, 401, { message: "wrong email or password" });
      const membership = input.teamSlug
        ? user.memberships.find((m) => m.team.slug === input.teamSlug)
        : user.memberships[0];
      if (!membership)
        return send(res, 403, {
          message: `you are not a member of ${input.teamSlug ? `team ${input.teamSlug}` : "any team"}`,
        });
      const teamId = membership.team.id;
      const sid = await createSession(deps.db, { userId: user.id, teamId, ttlSeconds: SESSION_TTL_SECONDS });
      const cookie = await getIronSession<SessionData>(req, res, options);
      cookie.sid = sid;
      await cookie.save();
      send(res, 200, await describeSession(deps.db, { userId: user.id, teamId }));
    },
    "POST /api/auth/sign-out": async (req, res) => {
      await parse(ZEmpty, req);
      const session = await current(req);
      // Server side first: the cookie, wherever it was copied, is dead from now on.
      if (session) await endSession(deps.db, session.sessionId);
      (await getIronSession<SessionData>(req, res, options)).destroy();
      send(res, 200, { signedOut: true });
    },
    "GET /api/auth/session": async (req, res) => {
      const session = await current(req);
      const described = session ? await describeSession(deps.db, session) : null;
      // 200 either way: being signed out is an answer, not an error (no noise in browser consoles).
      send(res, 200, described ? { signedIn: true, ...described } : { signedIn: false });
    },
    "POST /api/auth/team": async (req, res) => {
      const input = await parse(ZSwitchTeam, req);
      const session = await current(req);
      if (!session) return send(res, 401, { message: "not signed in" });
      if (!(await switchSessionTeam(deps.db, session.sessionId, input.teamId)))
        return send(res, 404, { message: `team ${input.teamId} not found` });
      send(res, 200, await describeSession(deps.db, { userId: session.userId, teamId: input.teamId }));
    },
  };
  return async (req: IncomingMessage, res: ServerResponse, pathname: string): Promise<void> => {
    const route = routes[`${req.method} ${pathname}`];
    if (!route) return send(res, 404, { message: `no route ${req.method} ${pathname}` });
    try {
      await route(req, res);
    } catch (error) {
      if (error instanceof HttpError) return send(res, error.status, { message: error.message });
      throw error;
    }
  };
}
