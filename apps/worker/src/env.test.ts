import { describe, expect, it } from "vitest";
import { readWorkerEnv } from "./env.ts";

const base = { DATABASE_URL: "postgres://x@127.0.0.1/db" };

describe("the worker's settings", () => {
  it("take WORKER_DEVICE as auto (unset), cpu or cuda:N", () => {
    expect(readWorkerEnv(base).WORKER_DEVICE).toBe("auto");
    expect(readWorkerEnv({ ...base, WORKER_DEVICE: "cpu" }).WORKER_DEVICE).toBe("cpu");
    expect(readWorkerEnv({ ...base, WORKER_DEVICE: "cuda:3" }).WORKER_DEVICE).toBe("cuda:3");
  });

  it("refuse any other device, naming the setting and what it accepts", () => {
    expect(() => readWorkerEnv({ ...base, WORKER_DEVICE: "gpu" })).toThrow(
      'worker configuration: WORKER_DEVICE: WORKER_DEVICE="gpu": expected auto, cpu or cuda:N',
    );
  });

  it("take the samplers' budgets in MiB, positive", () => {
    expect(readWorkerEnv({ ...base, WORKER_KV_CACHE_MIB: "512" }).WORKER_KV_CACHE_MIB).toBe(512);
    expect(readWorkerEnv(base).WORKER_POLICY_POOL_MIB).toBeUndefined();
    expect(() => readWorkerEnv({ ...base, WORKER_POLICY_POOL_MIB: "0" })).toThrow(/WORKER_POLICY_POOL_MIB/);
  });
});
