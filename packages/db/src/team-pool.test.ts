import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, type Db } from "./client.ts";
import { type PoolSettings, poolSettings } from "./env.ts";
import { asTeam, TeamPoolShares } from "./team-pool.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let t: TestDatabase;
const opened: Db[] = [];
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await Promise.all(opened.map((db) => db.$disconnect()));
  await t.drop();
});

const SETTINGS: PoolSettings = {
  poolSize: 4,
  teamShare: 2,
  statementTimeoutMs: 10_000,
  transactionMaxWaitMs: 10_000,
  transactionTimeoutMs: 10_000,
};

function open(settings: Partial<PoolSettings> = {}): Db {
  const db = createDb(t.url, { ...SETTINGS, ...settings });
  opened.push(db);
  return db;
}

const sleeping = async (db: Db, tag: string) => {
  const [row] = await db.$queryRaw<{ n: bigint }[]>`
    SELECT count(*) AS n FROM pg_stat_activity
    WHERE datname = current_database() AND state = 'active' AND query LIKE ${`%pg_sleep%${tag}%`}
      AND pid <> pg_backend_pid()`;
  return Number(row?.n ?? 0);
};

describe("a team's share of the pool", () => {
  it("holds one team's burst to its share, so another team's query takes the next free connection", async () => {
    const db = open();
    const watcher = open({ teamShare: 4 });
    await Promise.all([db.$queryRaw`SELECT 1`, watcher.$queryRaw`SELECT 1`]);
    // Team B: eight slow statements at once on a pool of four, its share two.
    let done = false;
    const burst = asTeam("team-b", () =>
      Promise.all(
        Array.from({ length: 8 }, () =>
          db.$queryRawUnsafe("SELECT pg_sleep(0.4)::text -- burst-b").then(() => Date.now()),
        ),
      ),
    ).finally(() => {
      done = true;
    });
    const seen: number[] = [];
    const watching = (async () => {
      while (!done) {
        seen.push(await sleeping(watcher, "burst-b"));
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    // Team A is answered at once, not after B's line.
    const started = Date.now();
    await asTeam("team-a", () => db.$queryRaw`SELECT 1`);
    const answeredIn = Date.now() - started;
    const finished = await burst;
    await watching;
    expect(answeredIn).toBeLessThan(150);
    expect(Math.max(...seen)).toBe(2);
    // B's statements ran two at a time: four rounds of 0.4 s.
    expect(Math.max(...finished) - started).toBeGreaterThan(1_000);
  });

  it("counts an interactive transaction as one place until it ends, its own statements free", async () => {
    const db = open({ teamShare: 1 });
    const order: string[] = [];
    await asTeam("team-c", async () => {
      let begun = () => {};
      const inside = new Promise<void>((resolve) => {
        begun = resolve;
      });
      const tx = db.$transaction(async (inner) => {
        begun();
        await inner.$queryRaw`SELECT pg_sleep(0.2)::text`;
        await inner.$queryRaw`SELECT 1`;
        order.push("transaction");
      });
      await inside;
      // Waits in the team's line until the transaction gives its place back.
      const after = db.$queryRaw`SELECT 1`.then(() => order.push("statement"));
      await Promise.all([tx, after]);
    });
    expect(order).toEqual(["transaction", "statement"]);
  });

  it("lets work of no team through uncounted, and serves a team's waiting calls first come first served", async () => {
    const shares = new TeamPoolShares(1);
    expect(await shares.enter()).toBeTypeOf("function");
    const served: number[] = [];
    const first = await asTeam("t", () => shares.enter());
    const waiting = [1, 2, 3].map((n) =>
      asTeam("t", () => shares.enter()).then((leave) => {
        served.push(n);
        leave();
      }),
    );
    expect(shares.held("t")).toBe(1);
    first();
    first(); // once only
    await Promise.all(waiting);
    expect(served).toEqual([1, 2, 3]);
    expect(shares.held("t")).toBe(0);
  });
});

describe("pool settings", () => {
  it("cancels a statement past the statement timeout", async () => {
    const db = open({ statementTimeoutMs: 200 });
    await expect(db.$queryRaw`SELECT pg_sleep(2)::text`).rejects.toThrow(/statement timeout/);
  });

  it("reads the pool from the environment, with defaults, and refuses a bad value naming it", () => {
    expect(poolSettings({})).toEqual({
      poolSize: 10,
      teamShare: 5,
      statementTimeoutMs: 60_000,
      transactionMaxWaitMs: 10_000,
      transactionTimeoutMs: 30_000,
    });
    expect(poolSettings({ DATABASE_POOL_SIZE: "4", DATABASE_TEAM_POOL_SHARE: "9" }).teamShare).toBe(4);
    expect(() => poolSettings({ DATABASE_POOL_SIZE: "ten" })).toThrow(/DATABASE_POOL_SIZE/);
    expect(() => poolSettings({ DATABASE_STATEMENT_TIMEOUT_MS: "-1" })).toThrow(
      /DATABASE_STATEMENT_TIMEOUT_MS/,
    );
  });
});
