import type { AddressInfo } from "node:net";
import { describe, expect, it } from "vitest";
import { HEALTH_ROUTES, healthStatus, startHealthServer, type WorkerHealth } from "./health.ts";

describe("the worker's health", () => {
  it("is ready only while registered, beating and not draining", () => {
    const now = 100_000;
    const ok: WorkerHealth = { workerId: "w", lastBeatAt: now - 1_000, draining: false };
    expect(healthStatus(ok, 15_000, now)).toEqual({ code: 200, status: "ok" });
    expect(healthStatus({ ...ok, workerId: null, lastBeatAt: null }, 15_000, now).status).toBe("starting");
    expect(healthStatus({ ...ok, lastBeatAt: now - 20_000 }, 15_000, now).status).toBe("heartbeat failing");
    expect(healthStatus({ ...ok, draining: true }, 15_000, now)).toEqual({ code: 503, status: "draining" });
  });

  it("answers its readiness and liveness routes, and names a missing one", async () => {
    let health: WorkerHealth = { workerId: "w1", lastBeatAt: Date.now(), draining: false };
    const server = await startHealthServer(0, "127.0.0.1", 15_000, () => health);
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const ready = await fetch(`${base}${HEALTH_ROUTES.ready}`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: "ok", workerId: "w1" });
      health = { ...health, draining: true };
      expect((await fetch(`${base}${HEALTH_ROUTES.ready}`)).status).toBe(503);
      expect((await fetch(`${base}${HEALTH_ROUTES.live}`)).status).toBe(200);
      expect((await fetch(`${base}/nope`)).status).toBe(404);
    } finally {
      server.close();
    }
  });
});
