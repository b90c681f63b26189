// Sampling over the Tinker protocol: sampling sessions name a policy (a
// sampler-weights path or a base model), resolved within the caller's team at
// every sample (a published path of another team too); asample queues one
// call of our sampling API.
import { findSamplerCheckpoint, savedWeightsSpec } from "@opentinker/db";
import type { PolicyRef } from "@opentinker/protocol";
import { samplePrompt, samplingParams, TinkerError } from "./convert.ts";
import { baseModelName } from "./models.ts";
import { ZSampleBody } from "./schemas.ts";
import { parseBody, type Scope } from "./scope.ts";
import { createSamplingSession as recordSamplingSession, samplerPolicy } from "./sessions.ts";
import { tinkerPathOf } from "./weights.ts";

/**
 * What a sampling call names, as our policy reference: a sampler-weights path
 * of the caller's team (or a published one), or a base model.
 */
export async function policyOf(
  scope: Scope,
  p: { model_path?: string | null; base_model?: string | null },
): Promise<{ policy: PolicyRef; baseModel: string }> {
  if (p.model_path) {
    const path = tinkerPathOf(p.model_path, "model_path", "sampler_weights");
    const reader = { teamId: scope.ctx.caller.teamId, published: true };
    const found = await findSamplerCheckpoint(scope.ctx.db, reader, path.model, path.name);
    if (!found) throw new TinkerError(404, `model_path: ${p.model_path} not found`);
    const spec = await savedWeightsSpec(scope.ctx.db, reader, "sampler", path.model, path.name);
    return { policy: { handle: found.handle }, baseModel: spec?.baseModel.name ?? "" };
  }
  if (p.base_model) {
    const baseModel = await baseModelName(scope, p.base_model, "base_model");
    return { policy: { baseModel }, baseModel };
  }
  throw new TinkerError(400, "model_path or base_model: one is required");
}

export async function sample(scope: Scope, body: unknown) {
  const input = parseBody(ZSampleBody, body);
  const named = input.sampling_session_id ? await samplerPolicy(scope, input.sampling_session_id) : input;
  const { policy } = await policyOf(scope, named);
  const future = await scope.api.sampling.sample({
    policy,
    prompt: samplePrompt(input),
    numSamples: input.num_samples,
    params: samplingParams(input.sampling_params),
    promptLogprobs: input.prompt_logprobs ?? false,
    topkPromptLogprobs: input.topk_prompt_logprobs,
  });
  return { request_id: future.requestId };
}

export const createSamplingSession = (scope: Scope, body: unknown) =>
  recordSamplingSession(scope, body, (policy) => policyOf(scope, policy));
