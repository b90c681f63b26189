// The Tinker endpoints other than retrieve_future: each validates its body,
// converts it, and calls one of our API procedures (the same code the REST and
// tRPC fronts run), so there is no second implementation of any operation.
import { randomUUID } from "node:crypto";
import type { Caller, Context, createCaller } from "@opentinker/api";
import {
  findTinkerCall,
  listBaseModels,
  type RequestKind,
  recordTinkerCall,
  releaseTinkerCalls,
  samplerHandleByName,
  type TinkerCallOutcome,
} from "@opentinker/db";
import { type FutureRef, type PolicyRef, parseTinkerPath } from "@opentinker/protocol";
import { TRPCError } from "@trpc/server";
import type { z } from "zod";
import { adamParams, forwardInput, samplePrompt, samplingParams, TinkerError } from "./convert.ts";
import { trpcRefusal } from "./errors.ts";
import { resolveBaseModelName, servedNames, type TinkerModelAliases } from "./model-names.ts";
import {
  type TinkerForwardBackwardBody,
  ZCreateModelBody,
  ZCreateSamplingSessionBody,
  ZCreateSessionBody,
  ZModelIdBody,
  ZOptimStepBody,
  ZSampleBody,
  ZSaveWeightsForSamplerBody,
  ZSessionBody,
} from "./schemas.ts";

export interface Scope {
  ctx: Context & { caller: Caller };
  api: ReturnType<typeof createCaller>;
  aliases: TinkerModelAliases;
}

/** The body checked against a Tinker schema; a 400 names the first wrong field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new TinkerError(400, `${issue?.path.join(".") || "body"}: ${issue?.message}`);
}

/** Feature flags the SDK asks for first: no pyqwest transport, no JWT auth, uncompressed bodies. */
export const clientConfig = () => ({
  pjwt_auth_enabled: false,
  credential_default_source: "api_key",
  use_pyqwest_transport: false,
  parallel_fwdbwd_chunks: true,
  proto_compress_fwdbwd: false,
  fwdbwd_max_chunk_len: 1024,
  create_model_via_load_weights: false,
});

// Sessions are not stored yet: a session id groups nothing server-side, and a
// heartbeat only says the service is up.
export function createSession(body: unknown) {
  parseBody(ZCreateSessionBody, body);
  return { type: "create_session", session_id: randomUUID(), info_message: null };
}

export function sessionHeartbeat(body: unknown) {
  parseBody(ZSessionBody, body);
  return { type: "session_heartbeat" };
}

async function served(scope: Scope) {
  const models = await listBaseModels(scope.ctx.db);
  return { models, names: models.map((m) => m.name) };
}

export async function serverCapabilities(scope: Scope) {
  const { models, names } = await served(scope);
  const context = new Map(models.map((m) => [m.name, m.contextLength]));
  return {
    supported_models: servedNames(scope.aliases, names).map((name) => ({
      model_name: name,
      max_context_length: context.get(scope.aliases[name] ?? name) ?? null,
    })),
  };
}

/** A Tinker base-model name as one of ours; an unknown one is refused with the served list. */
async function baseModelName(scope: Scope, name: string, field: string): Promise<string> {
  const { names } = await served(scope);
  const ours = resolveBaseModelName(name, scope.aliases, names);
  if (!ours)
    throw new TinkerError(
      400,
      `${field}: unknown base model "${name}"; served: ${servedNames(scope.aliases, names).join(", ")}`,
    );
  return ours;
}

/** A future that is already resolved: create_model answers at once, but the SDK polls for it. */
export const CREATED_MODEL_FUTURE = "created-model:";

export async function createModel(scope: Scope, body: unknown) {
  const input = parseBody(ZCreateModelBody, body);
  const baseModel = await baseModelName(scope, input.base_model, "base_model");
  const lora = input.lora_config;
  const adapter = await scope.api.adapters.create({
    name: `tinker-${randomUUID().slice(0, 8)}`,
    baseModel,
    ...(lora
      ? {
          rank: lora.rank,
          trainAttn: lora.train_attn,
          trainMlp: lora.train_mlp,
          trainUnembed: lora.train_unembed,
          ...(lora.seed != null ? { seed: lora.seed } : {}),
        }
      : {}),
  });
  return { request_id: `${CREATED_MODEL_FUTURE}${adapter.id}`, model_id: adapter.id };
}

export async function getInfo(scope: Scope, body: unknown) {
  const { model_id } = parseBody(ZModelIdBody, body);
  const adapter = await scope.api.adapters.get({ adapterId: model_id });
  return {
    type: "get_info",
    model_id: adapter.id,
    model_data: { arch: null, model_name: adapter.baseModel, tokenizer_id: adapter.baseModel },
    is_lora: adapter.kind === "LORA",
    lora_rank: adapter.rank,
    model_name: adapter.baseModel,
  };
}

/** Turns one training call into a Request through its procedure; a refusal becomes its status and message. */
async function queueCall(scope: Scope, kind: RequestKind, input: unknown): Promise<TinkerCallOutcome> {
  const procedures: Partial<Record<RequestKind, (i: never) => Promise<FutureRef>>> = {
    FORWARD: scope.api.training.forward,
    FORWARD_BACKWARD: scope.api.training.forwardBackward,
    OPTIM_STEP: scope.api.training.optimStep,
    SAVE_WEIGHTS_FOR_SAMPLER: scope.api.training.saveWeightsForSampler,
  };
  const procedure = procedures[kind];
  if (!procedure) return { errorStatus: 400, error: `${kind} is not a training call of the Tinker front` };
  try {
    return { requestId: (await procedure(input as never)).requestId };
  } catch (error) {
    if (error instanceof TRPCError) return trpcRefusal(error);
    console.error(`web: tinker ${kind} failed: ${error instanceof Error ? error.message : error}`);
    return { errorStatus: 500, error: "internal error" };
  }
}

/**
 * A training call in the model's seq_id order: queued at once when every
 * earlier call has been, else held (its future answers try_again meanwhile).
 * A call without a seq_id is queued as it comes.
 */
async function trainingCall(
  scope: Scope,
  kind: RequestKind,
  adapterId: string,
  seqId: number | null | undefined,
  input: object,
) {
  const teamId = scope.ctx.caller.teamId;
  const now = seqId == null ? await queueCall(scope, kind, input) : null;
  if (now) {
    if ("errorStatus" in now) throw new TinkerError(now.errorStatus, now.error);
    return { request_id: now.requestId, model_id: adapterId };
  }
  const recorded = await recordTinkerCall(scope.ctx.db, teamId, {
    adapterId,
    seqId: seqId as number,
    kind,
    input,
  });
  if (recorded.requestId === null && recorded.errorStatus === null)
    await releaseTinkerCalls(scope.ctx.db, teamId, adapterId, (call) =>
      queueCall(scope, call.kind, call.input),
    );
  const call = (await findTinkerCall(scope.ctx.db, teamId, recorded.id)) ?? recorded;
  if (call.errorStatus !== null) throw new TinkerError(call.errorStatus, call.error ?? "refused");
  // Always the call's own id (retrieve_future follows it to its Request), so a resent call gets the same future.
  return { request_id: call.id, model_id: adapterId };
}

export function forwardBackward(scope: Scope, body: TinkerForwardBackwardBody, forwardOnly: boolean) {
  const input = forwardInput(body.model_id, body.forward_backward_input);
  return trainingCall(scope, forwardOnly ? "FORWARD" : "FORWARD_BACKWARD", body.model_id, body.seq_id, input);
}

export function optimStep(scope: Scope, body: unknown) {
  const input = parseBody(ZOptimStepBody, body);
  const adam = adamParams(input.adam_params);
  return trainingCall(scope, "OPTIM_STEP", input.model_id, input.seq_id, { adapterId: input.model_id, adam });
}

/** Weights saved without a name (for a sampling session of their own) get a fresh one. */
const unnamedWeights = (seq: number | null | undefined) =>
  `sampling-session-${seq ?? 0}-${randomUUID().slice(0, 8)}`;

export function saveWeightsForSampler(scope: Scope, body: unknown) {
  const input = parseBody(ZSaveWeightsForSamplerBody, body);
  const name = input.path ?? unnamedWeights(input.sampling_session_seq_id);
  return trainingCall(scope, "SAVE_WEIGHTS_FOR_SAMPLER", input.model_id, input.seq_id, {
    adapterId: input.model_id,
    name,
  });
}

/**
 * A sampling session is the policy it samples, carried in its id (nothing is
 * stored): each sample resolves it again within the caller's team.
 */
const SESSION_PREFIX = "sampler-";

export const samplingSessionId = (policy: { model_path: string } | { base_model: string }) =>
  SESSION_PREFIX + Buffer.from(JSON.stringify(policy)).toString("base64url");

function sessionPolicy(id: string): { model_path?: string; base_model?: string } {
  if (id.startsWith(SESSION_PREFIX))
    try {
      const value: unknown = JSON.parse(Buffer.from(id.slice(SESSION_PREFIX.length), "base64url").toString());
      if (typeof value === "object" && value !== null) return value as { model_path?: string };
    } catch {}
  throw new TinkerError(404, `sampling session ${id} not found`);
}

/** What a sampling call names, as our policy reference, resolved within the caller's team. */
async function policyOf(
  scope: Scope,
  p: { model_path?: string | null; base_model?: string | null },
): Promise<PolicyRef> {
  if (p.model_path) {
    const path = parseTinkerPath(p.model_path);
    if (path?.kind !== "sampler_weights")
      throw new TinkerError(
        400,
        `model_path: expected tinker://<model>/sampler_weights/<name>, got "${p.model_path}"`,
      );
    const handle = await samplerHandleByName(scope.ctx.db, scope.ctx.caller.teamId, path.model, path.name);
    if (!handle) throw new TinkerError(404, `model_path: ${p.model_path} not found`);
    return { handle };
  }
  if (p.base_model) return { baseModel: await baseModelName(scope, p.base_model, "base_model") };
  throw new TinkerError(400, "model_path or base_model: one is required");
}

export async function createSamplingSession(scope: Scope, body: unknown) {
  const input = parseBody(ZCreateSamplingSessionBody, body);
  await policyOf(scope, input);
  const policy = input.model_path
    ? { model_path: input.model_path }
    : { base_model: input.base_model as string };
  return { type: "create_sampling_session", sampling_session_id: samplingSessionId(policy) };
}

export async function sample(scope: Scope, body: unknown) {
  const input = parseBody(ZSampleBody, body);
  if (input.prompt_logprobs || input.topk_prompt_logprobs > 0)
    throw new TinkerError(400, "prompt_logprobs: prompt logprobs are not supported by this service yet");
  const named = input.sampling_session_id ? sessionPolicy(input.sampling_session_id) : input;
  const policy = await policyOf(scope, named);
  const future = await scope.api.sampling.sample({
    policy,
    prompt: samplePrompt(input),
    numSamples: input.num_samples,
    params: samplingParams(input.sampling_params),
  });
  return { request_id: future.requestId };
}
