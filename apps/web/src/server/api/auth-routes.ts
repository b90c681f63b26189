// Dashboard sign-in: /api/auth/sign-in, /sign-out, /session and /team (switch the
// team the session acts for). API keys are for programs; this is for people.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Db, signIn } from "@opentinker/db";
import { getIronSession } from "iron-session";
import { z } from "zod";
import { HttpError, readJsonBody } from "./body.ts";
import { type SessionData, sessionOptions, ZSessionData } from "./session.ts";

const ZSignIn = z.object({
  email: z.string().min(1),
  password: z.string().min(1),
  teamSlug: z.string().optional(),
});
const ZSwitchTeam = z.object({ teamId: z.string().min(1) });

function send(res: ServerResponse, status: number, body: unknown): void {
  res.statusCode = status;
  res.setHeader("content-type", "application/json; charset=utf-8");
  res.setHeader("cache-control", "no-store");
  res.end(JSON.stringify(body));
}

async function describeSession(db: Db, data: SessionData) {
  const user = await db.user.findUnique({
    where: { id: data.userId },
    select: {
      id: true,
      email: true,
      name: true,
      memberships: { select: { role: true, team: { select: { id: true, slug: true, name: true } } } },
    },
  });
  if (!user) return null;
  const team = user.memberships.find((m) => m.team.id === data.teamId)?.team;
  if (!team) return null;
  const teams = user.memberships.map((m) => ({ ...m.team, role: m.role }));
  return { user: { id: user.id, email: user.email, name: user.name }, team, teams };
}

function parse<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new HttpError(400, `${issue?.path.join(".") || "body"}: ${issue?.message}`);
}

export function createAuthHandler(deps: { db: Db; sessionSecret: string }) {
  const options = sessionOptions(deps.sessionSecret);
  const routes: Record<string, (req: IncomingMessage, res: ServerResponse) => Promise<void>> = {
    "POST /api/auth/sign-in": async (req, res) => {
      const input = parse(ZSignIn, await readJsonBody(req));
      const user = await signIn(deps.db, input.email, input.password);
      if (!user) return send(res, 401, { message: "wrong email or password" });
      const membership = input.teamSlug
        ? user.memberships.find((m) => m.team.slug === input.teamSlug)
        : user.memberships[0];
      if (!membership)
        return send(res, 403, {
          message: `you are not a member of ${input.teamSlug ? `team ${input.teamSlug}` : "any team"}`,
        });
      const session = await getIronSession<SessionData>(req, res, options);
      Object.assign(session, { userId: user.id, teamId: membership.team.id });
      await session.save();
      send(res, 200, await describeSession(deps.db, { userId: user.id, teamId: membership.team.id }));
    },
    "POST /api/auth/sign-out": async (req, res) => {
      const session = await getIronSession<SessionData>(req, res, options);
      session.destroy();
      send(res, 200, { signedOut: true });
    },
    "GET /api/auth/session": async (req, res) => {
      const data = ZSessionData.safeParse({ ...(await getIronSession<SessionData>(req, res, options)) });
      const described = data.success ? await describeSession(deps.db, data.data) : null;
      // 200 either way: being signed out is an answer, not an error (no noise in browser consoles).
      send(res, 200, described ? { signedIn: true, ...described } : { signedIn: false });
    },
    "POST /api/auth/team": async (req, res) => {
      const input = parse(ZSwitchTeam, await readJsonBody(req));
      const session = await getIronSession<SessionData>(req, res, options);
      const current = ZSessionData.safeParse({ ...session });
      if (!current.success) return send(res, 401, { message: "not signed in" });
      const described = await describeSession(deps.db, { userId: current.data.userId, teamId: input.teamId });
      if (!described) return send(res, 404, { message: `team ${input.teamId} not found` });
      session.teamId = input.teamId;
      await session.save();
      send(res, 200, described);
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
