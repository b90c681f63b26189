import { chmod, mkdir, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { makeReachable, startEmbeddedPostgres } from "./embedded-postgres.ts";

async function query(url: string, sql: string) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query(sql)).rows;
  } finally {
    await client.end();
  }
}

describe("embedded Postgres", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("makes a file's ancestors searchable by others (x only), as the postgres user needs for the binaries", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "ot-reach-"));
    dirs.push(dir);
    const binDir = path.join(dir, "node_modules", "bin");
    await mkdir(binDir, { recursive: true });
    await writeFile(path.join(binDir, "initdb"), "");
    await chmod(dir, 0o700);
    await chmod(path.join(dir, "node_modules"), 0o750);
    await makeReachable(path.join(binDir, "initdb"));
    expect((await stat(dir)).mode & 0o777).toBe(0o701);
    expect((await stat(path.join(dir, "node_modules"))).mode & 0o777).toBe(0o751);
  });

  it("a second start reuses the data directory and keeps what was written", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "ot-embedded-"));
    dirs.push(dir);
    const options = { dataDir: path.join(dir, "pg"), database: "kept", persistent: true };

    const first = await startEmbeddedPostgres(options);
    expect(first.reused).toBe(false);
    await query(first.url, "CREATE TABLE note (body text); INSERT INTO note VALUES ('still here')");
    await first.stop();

    const second = await startEmbeddedPostgres(options);
    try {
      expect(await query(second.url, "SELECT body FROM note")).toEqual([{ body: "still here" }]);
    } finally {
      await second.stop();
    }
  }, 120_000);

  it("a cluster already running on the directory is reused rather than started twice", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "ot-embedded-"));
    dirs.push(dir);
    const options = { dataDir: path.join(dir, "pg"), database: "shared", persistent: true };
    const owner = await startEmbeddedPostgres(options);
    try {
      const guest = await startEmbeddedPostgres(options);
      expect(guest.reused).toBe(true);
      expect(guest.url).toBe(owner.url);
      await guest.stop(); // a guest's stop leaves the owner's server running
      expect(await query(owner.url, "SELECT 1 AS ok")).toEqual([{ ok: 1 }]);
    } finally {
      await owner.stop();
    }
  }, 120_000);
});
