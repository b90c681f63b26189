// Vitest global setup: one Postgres server for the whole run (DATABASE_URL when set,
// else an embedded cluster in a temporary folder, removed with its log at the
// end, so a run leaves nothing in the repository) and a migrated template
// database from which every test file clones its own database.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type DatabaseServer, openDatabaseServer } from "../database-server.ts";
import { migrate } from "../migrate.ts";

declare module "vitest" {
  export interface ProvidedContext {
    opentinkerServerUrl: string;
    opentinkerTemplateDb: string;
  }
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function admin<T>(url: string, run: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: withDatabase(url, "postgres") });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/**
 * The run's server: `url`, else an embedded cluster whose folder (its data and
 * its log beside it) is a temporary one, deleted when the server stops.
 */
export async function openTestServer(url: string | undefined): Promise<DatabaseServer> {
  if (url) return openDatabaseServer({ url, dataDir: tmpdir() });
  // Left behind if the cluster fails to start: its error names the log in it.
  const dir = await mkdtemp(path.join(tmpdir(), "opentinker-test-pg-"));
  const server = await openDatabaseServer({ dataDir: dir, database: "postgres", persistent: false });
  return {
    ...server,
    async stop() {
      await server.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

let server: DatabaseServer | undefined;
let template = "";

export async function setup(project: Pick<TestProject, "provide">): Promise<void> {
  server = await openTestServer(process.env.DATABASE_URL || undefined);
  template = `opentinker_template_${process.pid}`;
  await admin(server.url, async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${template}`);
    await client.query(`CREATE DATABASE ${template}`);
  });
  await migrate(withDatabase(server.url, template));
  project.provide("opentinkerServerUrl", server.url);
  project.provide("opentinkerTemplateDb", template);
}

export async function teardown(): Promise<void> {
  if (!server) return;
  await admin(server.url, (client) => client.query(`DROP DATABASE IF EXISTS ${template} WITH (FORCE)`));
  await server.stop();
}

export { admin, withDatabase };
