import { type ChildProcess, spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const MAIN = fileURLToPath(new URL("./main.ts", import.meta.url));

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

function waitFor<T>(probe: () => Promise<T | undefined>, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  return new Promise((resolve, reject) => {
    const tick = async () => {
      const value = await probe();
      if (value !== undefined) return resolve(value);
      if (Date.now() > deadline) return reject(new Error(`timed out waiting for ${what}`));
      setTimeout(tick, 100);
    };
    void tick();
  });
}

function exitOf(child: ChildProcess): Promise<number | null> {
  return new Promise((resolve) => child.once("exit", (code) => resolve(code)));
}

describe("worker process", () => {
  it("registers, advances its heartbeat, and marks itself offline on SIGTERM", async () => {
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      env: {
        ...process.env,
        DATABASE_URL: t.url,
        WORKER_HEARTBEAT_MS: "200",
        WORKER_CAPACITY: "3",
        WORKER_KV_CACHE_MIB: "64",
        WORKER_POLICY_POOL_MIB: "512",
        WORKER_ADAPTER_MEMORY_MIB: "2048",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const exited = exitOf(child);
    try {
      const worker = await waitFor(async () => (await t.db.worker.findFirst()) ?? undefined, "registration");
      expect(worker.capacity).toBe(3);
      expect(worker.device).toBe("cpu");
      expect(worker.deviceDescription).toMatch(/\d+ cores$/);
      expect(worker.deviceMemoryMiB).toBeGreaterThan(0);
      expect([worker.kvCacheMiB, worker.policyPoolMiB, worker.adapterMemoryMiB]).toEqual([64, 512, 2048]);
      expect(worker.pid).toBe(child.pid);
      const later = await waitFor(async () => {
        const row = await t.db.worker.findUniqueOrThrow({ where: { id: worker.id } });
        return row.heartbeatAt > worker.heartbeatAt ? row : undefined;
      }, "a heartbeat");
      expect(later.status).toBe("ONLINE");
    } finally {
      child.kill("SIGTERM");
    }
    expect(await exited).toBe(0);
    const after = await t.db.worker.findFirstOrThrow();
    expect(after.status).toBe("OFFLINE");
  });

  it("refuses a device it cannot use before it registers, saying which and why", async () => {
    const before = await t.db.worker.count();
    // (A value that is no device at all is refused by readWorkerEnv: env.test.ts.)
    // This machine has no usable GPU (no CUDA addon, or no driver): the line says which.
    const cuda0 = /WORKER_DEVICE=cuda:0: no usable CUDA device 0 \(/;
    for (const [device, said] of [["cuda:0", cuda0]] as const) {
      const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
        env: { ...process.env, DATABASE_URL: t.url, WORKER_DEVICE: device },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stderr = "";
      child.stderr?.on("data", (chunk: Buffer) => {
        stderr += chunk.toString();
      });
      expect(await exitOf(child)).toBe(1);
      expect(stderr).toMatch(said);
    }
    expect(await t.db.worker.count()).toBe(before);
  });

  it("refuses to start without DATABASE_URL, saying so", async () => {
    const env = { ...process.env };
    delete env.DATABASE_URL;
    const child = spawn(process.execPath, ["--import", "tsx", MAIN], {
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    expect(await exitOf(child)).toBe(1);
    expect(stderr).toContain("DATABASE_URL");
  });
});
