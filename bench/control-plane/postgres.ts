// The bench's Postgres: DATABASE_URL's server when set, else an embedded cluster
// in a temporary directory; each section gets a fresh database of its own.
import { randomBytes } from "node:crypto";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { openDatabaseServer } from "@opentinker/db";
import pg from "pg";
import type { Teardown } from "./teardown.ts";

export interface BenchServer {
  url: string;
  embedded: boolean;
}

export async function openBenchServer(url: string | undefined, teardown: Teardown): Promise<BenchServer> {
  const dataDir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-pg-"));
  teardown.defer("remove the cluster's directory", () => rm(dataDir, { recursive: true, force: true }));
  const server = await openDatabaseServer({ url, dataDir, database: "postgres", persistent: false });
  teardown.defer("stop Postgres", () => server.stop());
  return { url: server.url, embedded: server.embedded };
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function onServer(url: string, sql: string): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

/** A new empty database on the server, dropped (connections and all) by the teardown. */
export async function freshDatabase(server: BenchServer, label: string, teardown: Teardown): Promise<string> {
  const name = `opentinker_bench_${label}_${randomBytes(4).toString("hex")}`;
  await onServer(server.url, `CREATE DATABASE ${name}`);
  teardown.defer(`drop database ${name}`, () =>
    onServer(server.url, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
  );
  return withDatabase(server.url, name);
}
