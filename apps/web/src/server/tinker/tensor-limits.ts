// The bounds a forward/backward body's tensors are held to before they are
// expanded (wire.ts): those of the base model under the model the body names,
// resolved within the caller's team.
import { ShortCache } from "@opentinker/api";
import { adapterBaseModel } from "@opentinker/db";
import type { Scope } from "./scope.ts";
import { ABSOLUTE_TENSOR_LIMITS, type TensorLimits } from "./wire.ts";

// An adapter's base model never changes: remembered, so a training loop pays no lookup per call.
const known = new ShortCache<TensorLimits>(60_000);

/**
 * A model's tensor limits: one value per position of its base model's context.
 * A model the team does not have gets the absolute caps; the call then answers
 * 404 for it as any other call does.
 */
export async function tensorLimits(scope: Scope, modelId: string): Promise<TensorLimits> {
  const teamId = scope.ctx.caller.teamId;
  const limits = await known.through(`${teamId}\u0000${modelId}`, async () => {
    const model = await adapterBaseModel(scope.ctx.db, teamId, modelId);
    return model && { maxValues: model.contextLength, source: `one per position of ${model.name}'s context` };
  });
  return limits ?? ABSOLUTE_TENSOR_LIMITS;
}
