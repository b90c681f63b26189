// Each base model's sampler budgets on this worker (issue 45): the K/V cache and
// the loaded policy versions. Set from the env, else the engine's defaults, but
// never more than a share of the device's free memory at start (an eighth for
// K/V, a quarter for policies), so a small box is not overcommitted.
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

export const toMiB = (bytes: number) => Math.floor(bytes / MIB);
