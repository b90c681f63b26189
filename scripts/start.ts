// `npm start`: database (DATABASE_URL, or an embedded Postgres under .data/),
// migrations, seed, dashboard build, then the web process and one worker.
import type { ChildProcess } from "node:child_process";
import path from "node:path";
import {
  createDb,
  type DatabaseServer,
  DatabaseUnreachableError,
  DEMO_USER_EMAIL,
  describeDatabaseUrl,
  migrate,
  openDatabaseServer,
  seed,
} from "@opentinker/db";
import { baseModels } from "./base-models.ts";
import { withBuildLock } from "./build-lock.ts";
import { REPO_ROOT, readStartEnv, type StartEnv } from "./env.ts";
import { runCommand, spawnService, stopProcess } from "./processes.ts";
import { sessionSecret } from "./session-secret.ts";

const say = (line: string) => console.log(`opentinker: ${line}`);

async function main(): Promise<void> {
  const env = readStartEnv();
  const server = await openDatabaseServer({ url: env.DATABASE_URL, dataDir: env.OPENTINKER_DATA_DIR });
  say(
    server.embedded
      ? `database: embedded Postgres at ${describeDatabaseUrl(server.url)} (files in ${path.join(env.OPENTINKER_DATA_DIR, "pg")})`
      : `database: ${describeDatabaseUrl(server.url)}`,
  );
  const children: ChildProcess[] = [];
  let stopping = false;
  const shutdown = async (code: number) => {
    if (stopping) return;
    stopping = true;
    await Promise.all(children.map((child) => stopProcess(child)));
    await server.stop();
    process.exit(code);
  };
  process.on("SIGINT", () => void shutdown(0));
  process.on("SIGTERM", () => void shutdown(0));
  try {
    await startServices(env, server, children, { shutdown, stopping: () => stopping });
  } catch (error) {
    // Don't leave an embedded cluster (or a child) running behind a failed start.
    await Promise.all(children.map((child) => stopProcess(child)));
    await server.stop();
    throw error;
  }
}

async function startServices(
  env: StartEnv,
  server: DatabaseServer,
  children: ChildProcess[],
  lifecycle: { shutdown: (code: number) => Promise<void>; stopping: () => boolean },
): Promise<void> {
  const migrated = await migrate(server.url);
  say(
    migrated.applied.length
      ? `database: applied ${migrated.applied.join(", ")}`
      : "database: schema up to date",
  );
  const db = createDb(server.url);
  const seeded = await seed(db, {
    baseModels: await baseModels(env.OPENTINKER_DATA_DIR, env.OPENTINKER_MODELS),
  });
  await db.$disconnect();
  if (seeded.createdApiKey) say(`demo team's API key (shown once, keep it): ${seeded.createdApiKey}`);
  if (seeded.createdPassword)
    say(`dashboard sign-in (shown once, keep it): ${DEMO_USER_EMAIL} / ${seeded.createdPassword}`);
  say(`base models: ${seeded.baseModels.join(", ")}`);

  const childEnv = {
    ...process.env,
    DATABASE_URL: server.url,
    HOST: env.HOST,
    PORT: String(env.PORT),
    OPENTINKER_DATA_DIR: env.OPENTINKER_DATA_DIR,
    OPENTINKER_SESSION_SECRET:
      env.OPENTINKER_SESSION_SECRET ?? (await sessionSecret(env.OPENTINKER_DATA_DIR)),
    NEXT_TELEMETRY_DISABLED: "1",
    TURBO_TELEMETRY_DISABLED: "1",
  };
  if (process.env.OPENTINKER_SKIP_BUILD === "1")
    say("using the existing dashboard build (OPENTINKER_SKIP_BUILD=1)");
  else {
    say("building the dashboard (cached after the first run)");
    const turbo = path.join(REPO_ROOT, "node_modules", ".bin", "turbo");
    const built = await withBuildLock(() =>
      runCommand(turbo, ["run", "build", "--output-logs=errors-only"], childEnv, REPO_ROOT),
    );
    if (built !== 0) throw new Error(`the build failed (exit ${built}); see the output above`);
  }

  const url = await new Promise<string>((resolve, reject) => {
    const web = spawnService(path.join(REPO_ROOT, "apps/web/src/server/main.ts"), childEnv, (line) => {
      console.log(line);
      const ready = /^web: listening on (\S+)$/.exec(line);
      if (ready?.[1]) resolve(ready[1]);
    });
    const worker = spawnService(path.join(REPO_ROOT, "apps/worker/src/main.ts"), childEnv, (line) =>
      console.log(line),
    );
    for (const child of [web, worker]) {
      children.push(child);
      child.once("exit", (code, signal) => {
        if (lifecycle.stopping()) return;
        const reason = `${child === web ? "web" : "worker"} process exited (${signal ?? `code ${code}`})`;
        reject(new Error(reason));
        console.error(`opentinker: ${reason}; stopping`);
        void lifecycle.shutdown(1);
      });
    }
  });
  say(`OpenTinker is running at ${url}  (Ctrl-C stops it)`);
}

main().catch((error: unknown) => {
  // One line for the user: our errors already name what was wrong.
  const message = error instanceof Error ? error.message : String(error);
  console.error(
    `opentinker: ${error instanceof DatabaseUnreachableError ? message : `start failed: ${message}`}`,
  );
  process.exit(1);
});
