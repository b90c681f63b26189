// The Tinker protocol's service and model calls: the client's config,
// capabilities, base-model names, create_model (an adapter of the caller's
// team, created through our API), get_info and unload_model.
import { randomUUID } from "node:crypto";
import { deleteAdapter, listBaseModels, recordTinkerRun } from "@opentinker/db";
import { TinkerError } from "./convert.ts";
import { resolveBaseModelName, servedNames } from "./model-names.ts";
import { ZCreateModelBody, ZModelIdBody } from "./schemas.ts";
import { parseBody, type Scope } from "./scope.ts";
import { checkSession } from "./sessions.ts";
import { trainingCall } from "./training.ts";

/**
 * Feature flags the SDK asks for first: no pyqwest transport; JWTs minted for
 * our keys (so whoami has claims to read); forward/backward bodies in protobuf,
 * zstd-compressed.
 */
export const clientConfig = () => ({
  pjwt_auth_enabled: true,
  credential_default_source: "api_key",
  use_pyqwest_transport: false,
  parallel_fwdbwd_chunks: true,
  proto_compress_fwdbwd: true,
  fwdbwd_max_chunk_len: 1024,
  create_model_via_load_weights: false,
});

/** Flags the SDK refreshes while it runs: none change here, so it may ask rarely. */
export const dynamicConfig = () => ({ refresh_interval_sec: 3600 });

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
export async function baseModelName(scope: Scope, name: string, field: string): Promise<string> {
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
  await checkSession(scope, input.session_id);
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
  const run = {
    adapterId: adapter.id,
    sessionId: input.session_id ?? null,
    userMetadata: input.user_metadata ?? null,
  };
  try {
    await recordTinkerRun(scope.ctx.db, scope.ctx.caller.teamId, run);
  } catch (error) {
    // Nothing half-made: without its run record the adapter goes too.
    await deleteAdapter(scope.ctx.db, scope.ctx.caller.teamId, adapter.id);
    throw error;
  }
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

/**
 * unload_model: the run's training ends after the calls queued before it (its
 * state leaves the worker, its saved weights stay listed and loadable).
 */
export function unloadModel(scope: Scope, body: unknown) {
  const { model_id } = parseBody(ZModelIdBody, body);
  return trainingCall(scope, "UNLOAD", model_id, null, { adapterId: model_id });
}
