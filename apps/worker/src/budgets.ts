// Each base model's sampler budgets on this worker (issue 45): the K/V cache and
// the loaded policy versions. Set from the env, else the engine's defaults, but
// never more than a share of the device's free memory at start (an eighth for
// K/V, a quarter for policies), so a small box is not overcommitted. And the
// memory its adapters' training state may take, which placement accounts for.
import { DEFAULT_KV_CACHE_BYTES, DEFAULT_POLICY_BYTES } from "@opentinker/engine";

const MIB = 2 ** 20;

export interface SamplerBudgets {
  kvCacheBytes: number;
  policyBytes: number;
}

export interface BudgetSettings {
  WORKER_KV_CACHE_MIB?: number | undefined;
  WORKER_POLICY_POOL_MIB?: number | undefined;
}

export function samplerBudgets(env: BudgetSettings, freeBytes: number): SamplerBudgets {
  const derived = (fallback: number, share: number) =>
    Math.max(16 * MIB, Math.min(fallback, Math.floor(freeBytes * share)));
  return {
    kvCacheBytes: env.WORKER_KV_CACHE_MIB
      ? env.WORKER_KV_CACHE_MIB * MIB
      : derived(DEFAULT_KV_CACHE_BYTES, 1 / 8),
    policyBytes: env.WORKER_POLICY_POOL_MIB
      ? env.WORKER_POLICY_POOL_MIB * MIB
      : derived(DEFAULT_POLICY_BYTES, 1 / 4),
  };
}

/**
 * The memory this worker gives its adapters' training state (placement sums
 * their stateBytes within it): the env's, else half the device's free memory
 * at start (the rest holds base models, samplers and a step's activations).
 */
export function adapterMemoryBytes(
  env: { WORKER_ADAPTER_MEMORY_MIB?: number | undefined },
  freeBytes: number,
): number {
  return env.WORKER_ADAPTER_MEMORY_MIB
    ? env.WORKER_ADAPTER_MEMORY_MIB * MIB
    : Math.max(64 * MIB, Math.floor(freeBytes / 2));
}

export const toMiB = (bytes: number) => Math.floor(bytes / MIB);
