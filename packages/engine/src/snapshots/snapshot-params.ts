// A published snapshot's weights as forward-pass parameters over its base
// model: what the sampler serves a full-parameter version with, and what the
// trainer measures a KL against when a call names a snapshot as its reference.
import type { BaseModel } from "../base-model.ts";
import { assembleModelWeights } from "../model/weights.ts";
import type { ModelParams } from "../nn/params.ts";
import { frozenParams } from "../policy/frozen.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { LoraSnapshot, PolicySnapshot } from "./peft.ts";

/** A full-parameter snapshot's tensors as the model's own frozen weights (every one checked). */
export function fullSnapshotParams(
  base: BaseModel,
  tensors: ReadonlyMap<string, Float32Array>,
  where: string,
): ModelParams {
  const weights = assembleModelWeights(base.config, (spec) => {
    const data = tensors.get(spec.name);
    const size = spec.shape.reduce((a, b) => a * b, 1);
    if (!data || data.length !== size)
      throw new Error(`${where}: tensor ${spec.name} is ${data ? "the wrong size" : "missing"}`);
    return data;
  });
  return frozenParams({ ...base, weights });
}

/**
 * A LoRA snapshot over `base` as the training forward pass runs it: a policy of
 * the snapshot's rank, alpha and modules, holding the snapshot's values.
 */
function loraSnapshotParams(base: BaseModel, snapshot: LoraSnapshot, where: string): ModelParams {
  const targets = new Set(snapshot.targetModules);
  const policy = createLoraPolicy(base, {
    rank: snapshot.rank,
    alpha: snapshot.alpha,
    trainAttn: targets.has("q_proj"),
    trainMlp: targets.has("gate_proj"),
    trainUnembed: targets.has("lm_head"),
    seed: 0,
  });
  if (policy.tensors.length !== snapshot.tensors.size)
    throw new Error(
      `${where}: ${snapshot.tensors.size} adapter tensors for modules ${[...targets].join(", ")}, expected ${policy.tensors.length}`,
    );
  for (const t of policy.tensors) {
    const data = snapshot.tensors.get(t.name);
    if (!data || data.length !== t.value.length)
      throw new Error(`${where}: tensor ${t.name} is ${data ? "the wrong size" : "missing"}`);
    policy.params.backend.write(t.value, data);
  }
  return policy.params;
}

/** A snapshot (LoRA or full-parameter) as frozen forward-pass parameters over `base`. */
export function snapshotParams(base: BaseModel, snapshot: PolicySnapshot, where: string): ModelParams {
  return snapshot.kind === "full"
    ? fullSnapshotParams(base, snapshot.tensors, where)
    : loraSnapshotParams(base, snapshot, where);
}
