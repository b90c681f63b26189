// The account side of the Tinker protocol: the JWT exchange, the audit log of
// what was done to the team's saved weights, and the team's usage by hour.
import { apiKeyCreatorEmail, listAuditEvents, sessionMetadata, teamUsage } from "@opentinker/db";
import { mintJwt } from "./auth.ts";
import { stringMetadata, TinkerError } from "./convert.ts";
import { ZAuditQuery, ZUsageQuery } from "./rest-schemas.ts";
import { parseBody, type Scope } from "./scope.ts";

const DAY_MS = 86_400_000;
/** The widest usage window one call may ask for (as Tinker's). */
const MAX_USAGE_WINDOW_MS = 14 * DAY_MS;

/** auth/token: a JWT for the API key the call came with. */
export async function authToken(scope: Scope) {
  const { caller } = scope.ctx;
  if (!caller.apiKeyId) throw new TinkerError(401, "a token is minted only for an API key");
  const email = await apiKeyCreatorEmail(scope.ctx.db, caller.teamId, caller.apiKeyId);
  return { jwt: await mintJwt(scope.secret, caller, caller.apiKeyId, email) };
}

/** The team's audit log for one UTC day (today when none is named), oldest first. */
export async function auditLog(scope: Scope, query: unknown) {
  const { day } = parseBody(ZAuditQuery, query);
  const from = new Date(day ? `${day}T00:00:00Z` : new Date().toISOString().slice(0, 10));
  const entries = await listAuditEvents(
    scope.ctx.db,
    scope.ctx.caller.teamId,
    from,
    new Date(from.getTime() + DAY_MS),
  );
  return {
    entries: entries.map((e) => ({
      timestamp: e.at.toISOString(),
      event: e.event,
      model_id: e.modelId,
      tinker_path: e.tinkerPath,
      purpose: e.purpose,
    })),
  };
}

const eventInfo = (kind: string, count: number) =>
  kind === "checkpoint"
    ? { type: "checkpoint", count }
    : kind === "sampling_prefill"
      ? { type: "sampling_prefill", cached: false, token_count: count }
      : { type: kind, token_count: count };

/** The team's usage in hourly buckets over a window of at most 14 days. */
export async function billingUsage(scope: Scope, query: unknown) {
  const { starting_on, ending_before } = parseBody(ZUsageQuery, query);
  const span = ending_before.getTime() - starting_on.getTime();
  if (span <= 0) throw new TinkerError(400, "ending_before: must be after starting_on");
  if (span > MAX_USAGE_WINDOW_MS)
    throw new TinkerError(400, "ending_before: at most 14 days after starting_on");
  if (starting_on.getTime() > Date.now())
    throw new TinkerError(400, "starting_on: the window starts in the future");
  const teamId = scope.ctx.caller.teamId;
  const buckets = await teamUsage(scope.ctx.db, teamId, starting_on, ending_before);
  const sessions = [...new Set(buckets.flatMap((b) => (b.sessionId ? [b.sessionId] : [])))];
  const metadata = await sessionMetadata(scope.ctx.db, teamId, sessions);
  return {
    data: buckets.map((b) => ({
      bucket_start: b.bucketStart.toISOString(),
      bucket_end: new Date(b.bucketStart.getTime() + 3_600_000).toISOString(),
      base_model: b.baseModel,
      user_id: null,
      user_name: null,
      session_id: b.sessionId,
      project_id: b.projectId,
      event_info: eventInfo(b.kind, b.count),
    })),
    sessions: Object.fromEntries(
      sessions.map((id) => [id, { user_metadata: stringMetadata(metadata.get(id)) }]),
    ),
  };
}
