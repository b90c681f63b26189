import { randomBytes } from "node:crypto";
import { inject } from "vitest";
import { createDb, type Db } from "../client.ts";
import { admin, withDatabase } from "./global-setup.ts";

export interface TestDatabase {
  /** Connection URL of this test file's own database. */
  url: string;
  /** URL of the same server's `postgres` database (for creating more). */
  serverUrl: string;
  db: Db;
  /** Disconnects and drops the database. */
  drop(): Promise<void>;
}

/**
 * A fresh, migrated database for one test file, cloned from the run's template
 * (see global-setup.ts). Call in beforeAll and `drop` in afterAll.
 */
export async function createTestDatabase(): Promise<TestDatabase> {
  const serverUrl = inject("opentinkerServerUrl");
  const template = inject("opentinkerTemplateDb");
  const name = `opentinker_test_${randomBytes(6).toString("hex")}`;
  await admin(serverUrl, (client) => client.query(`CREATE DATABASE ${name} TEMPLATE ${template}`));
  const url = withDatabase(serverUrl, name);
  const db = createDb(url);
  return {
    url,
    serverUrl,
    db,
    async drop() {
      await db.$disconnect();
      await admin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`));
    },
  };
}

/** An empty database (no migrations) for tests of the migrator itself. */
export async function createEmptyDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const serverUrl = inject("opentinkerServerUrl");
  const name = `opentinker_empty_${randomBytes(6).toString("hex")}`;
  await admin(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  return {
    url: withDatabase(serverUrl, name),
    drop: () =>
      admin(serverUrl, (client) => client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(
        () => {},
      ),
  };
}
