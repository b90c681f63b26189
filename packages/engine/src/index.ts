// @opentinker/engine: base models, LoRA and full-parameter policies, training
// (losses, AdamW), snapshots (written to an @opentinker/store object store).

// Re-exported so builds that must pin the thread count (the built-in models) or say
// where they ran (the experiment runner) need no kernels dependency.
export { type AddonInfo, kernelInfo, machineInfo, setKernelThreads } from "@opentinker/kernels";
export * from "./base-model.ts";
export * from "./clients/futures.ts";
export * from "./clients/in-process.ts";
export * from "./clients/training-client.ts";
export * from "./model/index.ts";
export type { LinearParams } from "./nn/linear.ts";
export type { ModelParams, VisionParams } from "./nn/params.ts";
export { softTokens } from "./nn/vision.ts";
export { createFullPolicy } from "./policy/full-policy.ts";
export { createLoraPolicy, peftName } from "./policy/lora-policy.ts";
export { type LoraSpec, type Policy, type PolicyKind, zeroGrads } from "./policy/policy.ts";
export type { TrainableTensor } from "./policy/tensor.ts";
export * from "./rng.ts";
export * from "./sampler/kv-cache.ts";
export {
  BASE_KEY,
  PolicyBudgetError,
  PolicyPool,
  type PolicySource,
  type PoolEntry,
  policyKey,
} from "./sampler/policy-pool.ts";
export {
  AbortError,
  DEFAULT_KV_CACHE_BYTES,
  DEFAULT_POLICY_BYTES,
  type SampleOptions,
  Sampler,
  type SamplerOptions,
} from "./sampler/sampler.ts";
export { type SampledToken, sampleToken, sampleTokens, type TokenDraw } from "./sampler/sampling.ts";
export * from "./session/create-policy.ts";
export * from "./session/policy-session.ts";
export * from "./session/registry.ts";
export * from "./snapshots/peft.ts";
export * from "./snapshots/registry.ts";
export * from "./snapshots/state.ts";
export { Trainer, type TrainerOptions } from "./trainer/trainer.ts";
export { type DecodedImage, decodeImage } from "./vision/image.ts";
export { type PreparedImage, type PreparedInput, prepareInput } from "./vision/input.ts";
export { patchify } from "./vision/patches.ts";
