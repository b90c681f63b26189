// Tinker sessions and sampling sessions: stored per team, so the REST client
// can list a session's training runs and samplers. A sampling session names
// the policy it samples; every sample resolves that policy again within the
// caller's team, so nothing stored can widen what a sampler may read.
import { randomUUID } from "node:crypto";
import {
  createTinkerSession,
  getTinkerSampler,
  getTinkerSession,
  getTrainingRun,
  hasTinkerSession,
  listTinkerSessions,
  recordTinkerSampler,
  setTinkerSessionProject,
  touchTinkerSession,
} from "@opentinker/db";
import { TinkerError } from "./convert.ts";
import { pageQuery, ZAccessQuery, ZProjectBody } from "./rest-schemas.ts";
import { ZCreateSamplingSessionBody, ZCreateSessionBody, ZSessionBody } from "./schemas.ts";
import { parseBody, type Scope } from "./scope.ts";
import { signLink } from "./signed-links.ts";

const notFound = (what: string): never => {
  throw new TinkerError(404, `${what} not found`);
};

export async function createSession(scope: Scope, body: unknown) {
  const input = parseBody(ZCreateSessionBody, body);
  const { id } = await createTinkerSession(scope.ctx.db, scope.ctx.caller.teamId, {
    tags: input.tags,
    userMetadata: input.user_metadata ?? null,
    sdkVersion: input.sdk_version,
    projectId: input.project_id ?? null,
  });
  return { type: "create_session", session_id: id, info_message: null };
}

export async function sessionHeartbeat(scope: Scope, body: unknown) {
  const { session_id } = parseBody(ZSessionBody, body);
  if (!(await touchTinkerSession(scope.ctx.db, scope.ctx.caller.teamId, session_id)))
    notFound(`session ${session_id}`);
  return { type: "session_heartbeat" };
}

/** A session a call names must be the caller's team's. */
export async function checkSession(scope: Scope, sessionId: string | null | undefined): Promise<void> {
  if (sessionId && !(await hasTinkerSession(scope.ctx.db, scope.ctx.caller.teamId, sessionId)))
    notFound(`session_id: session ${sessionId}`);
}

export async function listSessions(scope: Scope, query: unknown) {
  const page = parseBody(pageQuery(20), query);
  const { ids } = await listTinkerSessions(scope.ctx.db, scope.ctx.caller.teamId, page);
  return { sessions: ids };
}

export async function getSession(scope: Scope, id: string, query: unknown) {
  parseBody(ZAccessQuery, query);
  const session = await getTinkerSession(scope.ctx.db, scope.ctx.caller.teamId, id);
  if (!session) return notFound(`session ${id}`);
  return { training_run_ids: session.trainingRunIds, sampler_ids: session.samplerIds };
}

export async function assignProject(scope: Scope, id: string, body: unknown) {
  const { project_id } = parseBody(ZProjectBody, body);
  if (!(await setTinkerSessionProject(scope.ctx.db, scope.ctx.caller.teamId, id, project_id)))
    notFound(`session ${id}`);
}

/** A sampler's id: under its session when it has one, as the SDK's own ids read (`<session>:sample:<n>`). */
const samplerId = (sessionId: string | null | undefined, seq: number | null | undefined) =>
  sessionId && seq != null ? `${sessionId}:sample:${seq}` : `sampler-${randomUUID()}`;

/**
 * Records a sampling session over a policy the caller's team may sample
 * (`check` resolves it first, so nothing is stored for a refused one).
 */
export async function createSamplingSession(
  scope: Scope,
  body: unknown,
  check: (policy: {
    model_path?: string | null;
    base_model?: string | null;
  }) => Promise<{ baseModel: string }>,
) {
  const input = parseBody(ZCreateSamplingSessionBody, body);
  await checkSession(scope, input.session_id);
  const { baseModel } = await check(input);
  const id = samplerId(input.session_id, input.sampling_session_seq_id);
  await recordTinkerSampler(scope.ctx.db, scope.ctx.caller.teamId, {
    id,
    sessionId: input.session_id ?? null,
    baseModel: input.base_model ?? baseModel,
    modelPath: input.model_path ?? null,
  });
  return { type: "create_sampling_session", sampling_session_id: id };
}

/** The policy a sampling session of the caller's team samples. */
export async function samplerPolicy(scope: Scope, id: string) {
  const sampler = await getTinkerSampler(scope.ctx.db, scope.ctx.caller.teamId, id);
  if (!sampler) return notFound(`sampling session ${id}`);
  return sampler.modelPath ? { model_path: sampler.modelPath } : { base_model: sampler.baseModel };
}

export async function getSampler(scope: Scope, id: string) {
  const sampler = await getTinkerSampler(scope.ctx.db, scope.ctx.caller.teamId, id);
  if (!sampler) return notFound(`sampler ${id}`);
  return { sampler_id: sampler.id, base_model: sampler.baseModel, model_path: sampler.modelPath };
}

/** Records the sampler a save_weights_for_sampler call hands back (one per call, so a re-poll gets the same). */
export async function samplerForSavedWeights(
  scope: Scope,
  saved: { requestId: string; model: string; path: string },
): Promise<string> {
  const teamId = scope.ctx.caller.teamId;
  const run = await getTrainingRun(scope.ctx.db, teamId, saved.model);
  const id = `sampler-${saved.requestId}`;
  await recordTinkerSampler(scope.ctx.db, teamId, {
    id,
    sessionId: run?.sessionId ?? null,
    baseModel: run?.baseModel ?? "",
    modelPath: saved.path,
  });
  return id;
}

/** trace_export: a link to the session's calls as a trace (built when downloaded, so always ready). */
export async function exportTrace(scope: Scope, id: string) {
  if (!(await hasTinkerSession(scope.ctx.db, scope.ctx.caller.teamId, id))) notFound(`session ${id}`);
  const link = signLink(scope.secret, scope.origin, {
    kind: "trace",
    team: scope.ctx.caller.teamId,
    session: id,
  });
  return { status: "ready", url: link.url, error: null };
}
