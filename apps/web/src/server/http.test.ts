import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createDb, findFreePort, RequestWaiter } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { LocalStore } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRequestListener } from "./http.ts";

const TEST_SESSION_SECRET = "test-session-secret-of-at-least-32-chars";
/** No test here reads a snapshot; the listener needs a store all the same. */
const store = new LocalStore(path.join(tmpdir(), "opentinker-http-test-store"));

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

async function serve(
  listener: ReturnType<typeof createRequestListener>,
): Promise<{ base: string; server: Server }> {
  const server = createServer(listener);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

describe("GET /api/health", () => {
  it("answers 200 with the database status and the workers' last heartbeat", async () => {
    const beat = new Date("2026-01-02T03:04:05.000Z");
    await t.db.worker.create({ data: { host: "h", pid: 1, capacity: 1, heartbeatAt: beat } });
    const { base, server } = await serve(
      createRequestListener({
        db: t.db,
        waiter: new RequestWaiter(t.db, t.url),
        sessionSecret: TEST_SESSION_SECRET,
        store,
      }),
    );
    try {
      const response = await fetch(`${base}/api/health`);
      expect(response.status).toBe(200);
      const body = await response.json();
      expect(body.status).toBe("ok");
      expect(body.database.status).toBe("ok");
      expect(body.database.latencyMs).toBeGreaterThanOrEqual(0);
      expect(body.workers).toEqual({ online: 1, lastHeartbeatAt: beat.toISOString() });
    } finally {
      server.close();
    }
  });

  it("answers 503 naming the database as unreachable when it is down", async () => {
    const down = createDb(`postgresql://postgres:x@127.0.0.1:${await findFreePort()}/nothing`);
    const { base, server } = await serve(
      createRequestListener({
        db: down,
        waiter: new RequestWaiter(down, t.url),
        sessionSecret: TEST_SESSION_SECRET,
        store,
      }),
    );
    try {
      const response = await fetch(`${base}/api/health`);
      expect(response.status).toBe(503);
      const body = await response.json();
      expect(body.database.status).toBe("unreachable");
      expect(body.database.error).not.toContain("\n");
    } finally {
      server.close();
      await down.$disconnect();
    }
  });

  it("unknown API routes and wrong methods get JSON errors naming the route", async () => {
    const { base, server } = await serve(
      createRequestListener({
        db: t.db,
        waiter: new RequestWaiter(t.db, t.url),
        sessionSecret: TEST_SESSION_SECRET,
        store,
      }),
    );
    try {
      const missing = await fetch(`${base}/api/nope`);
      expect(missing.status).toBe(404);
      expect((await missing.json()).error).toContain("/api/nope");
      const wrong = await fetch(`${base}/api/health`, { method: "POST" });
      expect(wrong.status).toBe(405);
    } finally {
      server.close();
    }
  });

  it("a draining process fails readiness but stays live, whatever the database says", async () => {
    let draining = false;
    const down = createDb(`postgresql://postgres:x@127.0.0.1:${await findFreePort()}/nothing`);
    const { base, server } = await serve(
      createRequestListener({
        db: t.db,
        waiter: new RequestWaiter(t.db, t.url),
        sessionSecret: TEST_SESSION_SECRET,
        store,
        draining: () => draining,
      }),
    );
    const unreachable = await serve(
      createRequestListener({
        db: down,
        waiter: new RequestWaiter(down, t.url),
        sessionSecret: TEST_SESSION_SECRET,
        store,
      }),
    );
    try {
      expect((await fetch(`${base}/api/health`)).status).toBe(200);
      draining = true;
      const ready = await fetch(`${base}/api/health`);
      expect(ready.status).toBe(503);
      expect((await ready.json()).status).toBe("draining");
      expect((await fetch(`${base}/api/health/live`)).status).toBe(200);
      expect((await fetch(`${unreachable.base}/api/health/live`)).status).toBe(200);
      expect((await fetch(`${base}/api/health/live`, { method: "POST" })).status).toBe(405);
    } finally {
      server.close();
      unreachable.server.close();
      await down.$disconnect();
    }
  });
});
