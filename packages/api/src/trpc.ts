// The tRPC instance: the procedures every router builds on, and how domain
// errors become HTTP statuses.
import {
  asTeam,
  getTeam,
  NotFoundError,
  NoWorkerError,
  QuotaExceededError,
  UnknownTeamError,
} from "@opentinker/db";
import { initTRPC, TRPCError } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";
import type { Context } from "./context.ts";
import { publicMessage } from "./errors.ts";

// isDev off: error responses never carry stack traces; messages are what a client may see.
const t = initTRPC
  .context<Context>()
  .meta<OpenApiMeta>()
  .create({
    isDev: false,
    errorFormatter: ({ shape, error }) => ({ ...shape, message: publicMessage(error) }),
  });

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

const UNAUTHENTICATED = "missing, unknown or revoked API key: send Authorization: Bearer <key>";

/** The 401 every team procedure answers a caller it cannot authenticate. */
export const unauthenticated = (cause?: unknown) =>
  new TRPCError({ code: "UNAUTHORIZED", message: UNAUTHENTICATED, cause });

/** Translates what our packages throw into the HTTP status a client should see. */
function asTrpcError(cause: unknown): TRPCError | null {
  if (cause instanceof UnknownTeamError) return unauthenticated(cause);
  if (cause instanceof NotFoundError)
    return new TRPCError({ code: "NOT_FOUND", message: cause.message, cause });
  if (cause instanceof QuotaExceededError)
    return new TRPCError({ code: "TOO_MANY_REQUESTS", message: cause.message, cause });
  if (cause instanceof NoWorkerError)
    return new TRPCError({ code: "SERVICE_UNAVAILABLE", message: cause.message, cause });
  if (cause instanceof RangeError || cause instanceof TypeError)
    return new TRPCError({ code: "BAD_REQUEST", message: cause.message, cause });
  const code = (cause as { code?: unknown } | null)?.code;
  if (code === "P2002")
    return new TRPCError({ code: "CONFLICT", message: "a resource with that name already exists", cause });
  return null;
}

const domainErrors = t.middleware(async ({ next }) => {
  const result = await next();
  if (!result.ok && result.error.code === "INTERNAL_SERVER_ERROR") {
    const mapped = asTrpcError(result.error.cause);
    if (mapped) throw mapped;
  }
  return result;
});

export const publicProcedure = t.procedure.use(domainErrors);

/**
 * Every team-owned procedure: resolves the caller's team or refuses with 401,
 * and runs as that team (its queries hold at most the team's share of the
 * database pool: packages/db/src/team-pool.ts). A call that fails is checked
 * once more: if the team was deleted meanwhile (its key was still remembered),
 * the answer is 401, whatever the failure was.
 */
export const teamProcedure = publicProcedure.use(async ({ ctx, next }) => {
  const caller = ctx.caller;
  if (!caller) throw unauthenticated();
  const result = await asTeam(caller.teamId, () => next({ ctx: { ...ctx, caller } }));
  if (!result.ok && result.error.code !== "UNAUTHORIZED" && !(await getTeam(ctx.db, caller.teamId)))
    throw unauthenticated(result.error);
  return result;
});

type Method = "GET" | "POST" | "DELETE";

/** A team procedure served over REST too, at `path` under /api (in the OpenAPI document under `tag`). */
export const teamRoute = (method: Method, path: `/${string}`, tag: string) =>
  teamProcedure.meta({ openapi: { method, path, protect: true, tags: [tag] } });

export function notFound(what: string, id: string): never {
  throw new TRPCError({ code: "NOT_FOUND", message: `${what} ${id} not found` });
}

/** The row, or the 404 naming what the team has no such one of (another team's answers the same). */
export function found<T>(row: T | null | undefined, what: string, id: string): T {
  if (row === null || row === undefined) notFound(what, id);
  return row;
}

export function badRequest(message: string): never {
  throw new TRPCError({ code: "BAD_REQUEST", message });
}
