// Which database errors count as transient, from errors a real Postgres raises:
// a connection killed under a query, no transaction in time, a lock wait given
// up, a server that is not there. A refused row (a constraint) is not transient.
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb } from "./client.ts";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { findFreePort } from "./free-port.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { isTransientDbError } from "./transient.ts";

let t: TestDatabase;
let admin: pg.Client;
beforeAll(async () => {
  t = await createTestDatabase();
  admin = new pg.Client({ connectionString: t.url });
  await admin.connect();
});
afterAll(async () => {
  await admin.end();
  await t.drop();
});

const caught = (work: Promise<unknown>) =>
  work.then(
    () => expect.unreachable("the work succeeded"),
    (error: unknown) => error,
  );

describe("isTransientDbError", () => {
  it("a query whose connection the server terminated", async () => {
    const query = caught(t.db.$queryRaw`SELECT pg_sleep(5)::text`);
    await expect
      .poll(async () => {
        const { rowCount } = await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(5)%' AND pid <> pg_backend_pid()",
        );
        return rowCount;
      })
      .toBe(1);
    expect(isTransientDbError(await query)).toBe(true);
  });

  it("a transaction that could not start in time, and one that expired", async () => {
    const slow = (maxWait: number, timeout = 5000) =>
      t.db.$transaction(async (tx) => tx.$queryRaw`SELECT pg_sleep(0.4)::text`, { maxWait, timeout });
    const outcomes = await Promise.allSettled(Array.from({ length: 14 }, () => slow(1)));
    const refused = outcomes.filter((o) => o.status === "rejected").map((o) => o.reason);
    expect(refused.length).toBeGreaterThan(0);
    for (const error of refused) expect(isTransientDbError(error), String(error)).toBe(true);
    const expired = await caught(
      t.db.$transaction(
        async (tx) => {
          await tx.$queryRaw`SELECT pg_sleep(0.3)::text`;
          await tx.$queryRaw`SELECT 1`;
        },
        { timeout: 50 },
      ),
    );
    expect(isTransientDbError(expired), String(expired)).toBe(true);
  });

  it("a lock wait given up", async () => {
    await admin.query('BEGIN; LOCK TABLE "Metric" IN ACCESS EXCLUSIVE MODE');
    try {
      const error = await caught(
        t.db.$transaction(async (tx) => {
          await tx.$executeRaw`SET LOCAL lock_timeout = 100`;
          await tx.$queryRaw`SELECT count(*) FROM "Metric"`;
        }),
      );
      expect(isTransientDbError(error), String(error)).toBe(true);
    } finally {
      await admin.query("ROLLBACK");
    }
  });

  it("a server that is not there", async () => {
    const url = new URL(t.url);
    url.port = String(await findFreePort());
    const nowhere = createDb(url.toString());
    try {
      expect(isTransientDbError(await caught(nowhere.$queryRaw`SELECT 1`))).toBe(true);
    } finally {
      await nowhere.$disconnect();
    }
  });

  it("not a row the database refuses, nor an error that is no database's", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "transient-unique");
    const duplicate = await caught(
      t.db.adapter.create({
        data: {
          teamId: team.id,
          baseModelId: adapter.baseModelId,
          name: adapter.name,
          kind: "LORA",
          rank: 8,
          alpha: 16,
        },
      }),
    );
    expect(duplicate).toMatchObject({ code: "P2002" });
    expect(isTransientDbError(duplicate)).toBe(false);
    expect(isTransientDbError(new RangeError("steps: too many"))).toBe(false);
    expect(isTransientDbError(null)).toBe(false);
  });
});
