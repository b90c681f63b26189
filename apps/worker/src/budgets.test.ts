import { DEFAULT_KV_CACHE_BYTES, DEFAULT_POLICY_BYTES } from "@opentinker/engine";
import { describe, expect, it } from "vitest";
import { adapterMemoryBytes, samplerBudgets } from "./budgets.ts";

const GiB = 2 ** 30;
const MiB = 2 ** 20;

describe("sampler budgets", () => {
  it("are the engine's defaults on a box with room", () => {
    expect(samplerBudgets({}, 16 * GiB)).toEqual({
      kvCacheBytes: DEFAULT_KV_CACHE_BYTES,
      policyBytes: DEFAULT_POLICY_BYTES,
    });
  });

  it("shrink to a share of free memory on a small box, never below 16 MiB", () => {
    expect(samplerBudgets({}, 1 * GiB)).toEqual({ kvCacheBytes: 128 * MiB, policyBytes: 256 * MiB });
    expect(samplerBudgets({}, 0)).toEqual({ kvCacheBytes: 16 * MiB, policyBytes: 16 * MiB });
  });

  it("are what the env says when set, whatever is free", () => {
    expect(samplerBudgets({ WORKER_KV_CACHE_MIB: 4096, WORKER_POLICY_POOL_MIB: 64 }, 1 * GiB)).toEqual({
      kvCacheBytes: 4096 * MiB,
      policyBytes: 64 * MiB,
    });
  });
});

describe("adapter memory", () => {
  it("is half the free memory unless set, never below 64 MiB", () => {
    expect(adapterMemoryBytes({}, 16 * GiB)).toBe(8 * GiB);
    expect(adapterMemoryBytes({}, 0)).toBe(64 * MiB);
    expect(adapterMemoryBytes({ WORKER_ADAPTER_MEMORY_MIB: 300 }, 16 * GiB)).toBe(300 * MiB);
  });
});
