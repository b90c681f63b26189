import { mkdir, mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { MIGRATIONS_DIR, migrate, readMigrations } from "./migrate.ts";
import { createEmptyDatabase } from "./testing/index.ts";

async function tableNames(url: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY 1",
    );
    return rows.map((r) => r.table_name);
  } finally {
    await client.end();
  }
}

describe("migrate", () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it("applies every committed migration to a clean database, and a second run changes nothing", async () => {
    const empty = await createEmptyDatabase();
    cleanups.push(empty.drop);
    const committed = (await readMigrations()).map((m) => m.name);

    const first = await migrate(empty.url);
    expect(first.applied).toEqual(committed);
    const tablesAfterFirst = await tableNames(empty.url);
    expect(tablesAfterFirst).toContain("Snapshot");
    expect(tablesAfterFirst).toContain("_prisma_migrations");

    const second = await migrate(empty.url);
    expect(second.applied).toEqual([]);
    expect(second.alreadyApplied).toEqual(committed);
    expect(await tableNames(empty.url)).toEqual(tablesAfterFirst);
  });

  it("records what it applied in Prisma's own history table with the file's checksum", async () => {
    const empty = await createEmptyDatabase();
    cleanups.push(empty.drop);
    await migrate(empty.url);
    const client = new pg.Client({ connectionString: empty.url });
    await client.connect();
    const { rows } = await client.query(
      `SELECT migration_name, checksum, finished_at, applied_steps_count FROM "_prisma_migrations" ORDER BY 1`,
    );
    await client.end();
    const committed = await readMigrations(MIGRATIONS_DIR);
    expect(rows.map((r) => [r.migration_name, r.checksum, r.applied_steps_count])).toEqual(
      committed.map((m) => [m.name, m.checksum, 1]),
    );
    expect(rows.every((r) => r.finished_at instanceof Date)).toBe(true);
  });

  it("rolls a failing migration back completely and names it", async () => {
    const empty = await createEmptyDatabase();
    cleanups.push(empty.drop);
    const dir = await mkdtemp(path.join(tmpdir(), "ot-migrations-"));
    await mkdir(path.join(dir, "001_ok"));
    await writeFile(path.join(dir, "001_ok", "migration.sql"), "CREATE TABLE a (id int);");
    await mkdir(path.join(dir, "002_broken"));
    await writeFile(
      path.join(dir, "002_broken", "migration.sql"),
      "CREATE TABLE b (id int); SELECT nope FROM nowhere;",
    );

    await expect(migrate(empty.url, dir)).rejects.toThrow(/migration 002_broken failed and was rolled back/);
    expect(await tableNames(empty.url)).toEqual(["_prisma_migrations", "a"]);
  });

  it("refuses to run when an applied migration was edited afterwards", async () => {
    const empty = await createEmptyDatabase();
    cleanups.push(empty.drop);
    const dir = await mkdtemp(path.join(tmpdir(), "ot-migrations-"));
    await mkdir(path.join(dir, "001_ok"));
    await writeFile(path.join(dir, "001_ok", "migration.sql"), "CREATE TABLE a (id int);");
    await migrate(empty.url, dir);
    await writeFile(path.join(dir, "001_ok", "migration.sql"), "CREATE TABLE a (id bigint);");
    await expect(migrate(empty.url, dir)).rejects.toThrow(/001_ok was changed after it was applied/);
  });

  it("two concurrent runs apply each migration exactly once", async () => {
    const empty = await createEmptyDatabase();
    cleanups.push(empty.drop);
    const [a, b] = await Promise.all([migrate(empty.url), migrate(empty.url)]);
    const committed = (await readMigrations()).map((m) => m.name);
    expect([...a.applied, ...b.applied].sort()).toEqual([...committed].sort());
  });
});
