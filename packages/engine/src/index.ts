// @opentinker/engine: base models, LoRA and full-parameter policies, training
// (losses, AdamW), snapshots and their store.
export * from "./base-model.ts";
export * from "./clients/futures.ts";
export * from "./clients/in-process.ts";
export * from "./model/index.ts";
export type { LinearParams } from "./nn/linear.ts";
export type { ModelParams } from "./nn/params.ts";
export { createFullPolicy } from "./policy/full-policy.ts";
export { createLoraPolicy, peftName } from "./policy/lora-policy.ts";
export { type LoraSpec, type Policy, type PolicyKind, zeroGrads } from "./policy/policy.ts";
export type { TrainableTensor } from "./policy/tensor.ts";
export * from "./rng.ts";
export * from "./sampler/kv-cache.ts";
export { BASE_KEY, PolicyBudgetError, PolicyPool, type PoolEntry } from "./sampler/policy-pool.ts";
export { AbortError, Sampler, type SamplerOptions } from "./sampler/sampler.ts";
export { type SampledToken, sampleToken } from "./sampler/sampling.ts";
export * from "./snapshots/peft.ts";
export * from "./snapshots/publish.ts";
export * from "./snapshots/registry.ts";
export * from "./snapshots/state.ts";
export * from "./snapshots/store.ts";
export { Trainer, type TrainerOptions } from "./trainer/trainer.ts";
