import { createHash, randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { runMigrations as runQueueMigrations } from "graphile-worker";
import pg from "pg";
import { quietQueueLogger } from "./queue-logger.ts";

/** prisma/migrations at the repository root. */
export const MIGRATIONS_DIR = fileURLToPath(new URL("../../../prisma/migrations", import.meta.url));

// Any constant shared by every migrator of this schema: serialises concurrent runs.
const MIGRATION_LOCK_KEY = 7_424_113_001;

// Prisma's own bookkeeping table, so the stock `prisma migrate` CLI sees the same
// history we applied.
const CREATE_HISTORY_TABLE = `
CREATE TABLE IF NOT EXISTS "_prisma_migrations" (
  "id"                  VARCHAR(36) PRIMARY KEY NOT NULL,
  "checksum"            VARCHAR(64) NOT NULL,
  "finished_at"         TIMESTAMPTZ,
  "migration_name"      VARCHAR(255) NOT NULL,
  "logs"                TEXT,
  "rolled_back_at"      TIMESTAMPTZ,
  "started_at"          TIMESTAMPTZ NOT NULL DEFAULT now(),
  "applied_steps_count" INTEGER NOT NULL DEFAULT 0
)`;

export interface Migration {
  name: string;
  sql: string;
  checksum: string;
}

export interface MigrationResult {
  /** Names applied by this run, in order. */
  applied: string[];
  /** Names that were already applied before this run. */
  alreadyApplied: string[];
}

export class MigrationError extends Error {
  override name = "MigrationError";
}

/** The committed migrations, in the order Prisma applies them (folder name). */
export async function readMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const entries = await readdir(dir, { withFileTypes: true });
  const folders = entries.filter((entry) => entry.isDirectory()).map((entry) => entry.name);
  folders.sort();
  const migrations: Migration[] = [];
  for (const name of folders) {
    const file = path.join(dir, name, "migration.sql");
    if (!existsSync(file)) throw new MigrationError(`migration ${name} has no migration.sql`);
    const sql = await readFile(file, "utf8");
    migrations.push({ name, sql, checksum: createHash("sha256").update(sql).digest("hex") });
  }
  return migrations;
}

interface HistoryRow {
  migration_name: string;
  checksum: string;
  finished_at: Date | null;
  rolled_back_at: Date | null;
}

function checkHistory(history: HistoryRow[], local: Migration[]): Set<string> {
  const failed = history.find((row) => row.finished_at === null && row.rolled_back_at === null);
  if (failed) {
    throw new MigrationError(
      `migration ${failed.migration_name} failed earlier and is still recorded as started; resolve it before migrating`,
    );
  }
  const done = new Map(
    history.filter((row) => row.rolled_back_at === null).map((r) => [r.migration_name, r]),
  );
  for (const migration of local) {
    const row = done.get(migration.name);
    if (row && row.checksum !== migration.checksum) {
      throw new MigrationError(
        `migration ${migration.name} was changed after it was applied (checksum differs)`,
      );
    }
  }
  return new Set(done.keys());
}

async function applyOne(client: pg.Client, migration: Migration): Promise<void> {
  const id = randomUUID();
  await client.query("BEGIN");
  try {
    await client.query(
      `INSERT INTO "_prisma_migrations" (id, checksum, migration_name, started_at) VALUES ($1, $2, $3, now())`,
      [id, migration.checksum, migration.name],
    );
    await client.query(migration.sql);
    await client.query(
      `UPDATE "_prisma_migrations" SET finished_at = now(), applied_steps_count = 1 WHERE id = $1`,
      [id],
    );
    await client.query("COMMIT");
  } catch (error) {
    // Postgres DDL is transactional: a failed migration leaves nothing behind.
    await client.query("ROLLBACK");
    const reason = error instanceof Error ? error.message : String(error);
    throw new MigrationError(`migration ${migration.name} failed and was rolled back: ${reason}`);
  }
}

/**
 * Applies the committed migrations that the database has not seen, each in its own
 * transaction, and records them in Prisma's `_prisma_migrations` table. Works
 * offline (no Prisma engine binaries) and is safe to run concurrently.
 */
export async function migrate(url: string, dir: string = MIGRATIONS_DIR): Promise<MigrationResult> {
  const local = await readMigrations(dir);
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [MIGRATION_LOCK_KEY]);
    await client.query(CREATE_HISTORY_TABLE);
    const { rows } = await client.query<HistoryRow>(
      `SELECT migration_name, checksum, finished_at, rolled_back_at FROM "_prisma_migrations"`,
    );
    const done = checkHistory(rows, local);
    const result: MigrationResult = { applied: [], alreadyApplied: [] };
    for (const migration of local) {
      if (done.has(migration.name)) {
        result.alreadyApplied.push(migration.name);
        continue;
      }
      await applyOne(client, migration);
      result.applied.push(migration.name);
    }
    // The request queue's own schema (graphile_worker), versioned by the library.
    await runQueueMigrations({ connectionString: url, logger: quietQueueLogger });
    return result;
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [MIGRATION_LOCK_KEY]).catch(() => {});
    await client.end();
  }
}
