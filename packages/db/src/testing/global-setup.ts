// Vitest global setup: one Postgres server for the whole run (DATABASE_URL when set,
// else an embedded cluster under .data/test-pg) and a migrated template database
// from which every test file clones its own database.
import path from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import type { TestProject } from "vitest/node";
import { type DatabaseServer, openDatabaseServer } from "../database-server.ts";
import { migrate } from "../migrate.ts";

const REPO_ROOT = fileURLToPath(new URL("../../../../", import.meta.url));

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

let server: DatabaseServer | undefined;
let template = "";

export async function setup(project: TestProject): Promise<void> {
  server = await openDatabaseServer({
    url: process.env.DATABASE_URL || undefined,
    dataDir: path.join(REPO_ROOT, ".data", "test"),
    database: "postgres",
    persistent: false,
  });
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
