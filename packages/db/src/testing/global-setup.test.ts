// A test run without DATABASE_URL starts its own embedded cluster: it must leave
// nothing in the repository (its data, or the server's log beside it).
import { existsSync, readdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { describe, expect, it, type ProvidedContext } from "vitest";
import { setup, teardown } from "./global-setup.ts";

const DATA = fileURLToPath(new URL("../../../../.data", import.meta.url));

/** Every path under the repository's .data folder (where `npm start` keeps its cluster). */
function dataTree(dir = DATA): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? [full, ...dataTree(full)] : [full];
  });
}

describe("the tests' own database server", () => {
  it("runs an embedded cluster outside the repository and leaves nothing behind", async () => {
    const before = dataTree();
    const url = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    const provided: Partial<ProvidedContext> = {};
    const project = {
      provide<K extends keyof ProvidedContext>(key: K, value: ProvidedContext[K]) {
        provided[key] = value;
      },
    };
    try {
      await setup(project);
    } finally {
      if (url !== undefined) process.env.DATABASE_URL = url;
    }
    try {
      const client = new pg.Client({ connectionString: provided.opentinkerServerUrl });
      await client.connect();
      const { rows } = await client.query("SELECT current_setting('data_directory') AS dir");
      await client.end();
      expect(rows[0].dir.startsWith(path.resolve(DATA, ".."))).toBe(false);
    } finally {
      await teardown();
    }
    expect(dataTree()).toEqual(before);
  }, 180_000);
});
