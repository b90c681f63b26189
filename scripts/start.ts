// `npm start`: database (DATABASE_URL, or an embedded Postgres under .data/),
// migrations, seed, dashboard build, then the web process and one worker.
import path from "node:path";
import {
  createDb,
  type DatabaseServer,
  DatabaseUnreachableError,
  describeDatabaseUrl,
  inheritedEnv,
  openDatabaseServer,
  releaseLostWorker,
} from "@opentinker/db";
import { withBuildLock } from "./build-lock.ts";
import { REPO_ROOT, readStartEnv, type StartEnv } from "./env.ts";
import { runCommand, spawnService } from "./processes.ts";
import { sessionSecret } from "./session-secret.ts";
import { setUpDatabase } from "./setup-database.ts";
import { type Services, stopDatabase, stopServices } from "./shutdown.ts";
import { Supervised } from "./supervise.ts";

const say = (line: string) => console.log(`opentinker: ${line}`);

async function main(): Promise<void> {
  const env = readStartEnv();
  const server = await openDatabaseServer({ url: env.DATABASE_URL, dataDir: env.OPENTINKER_DATA_DIR });
  say(
    server.embedded
      ? `database: embedded Postgres at ${describeDatabaseUrl(server.url)} (files in ${path.join(env.OPENTINKER_DATA_DIR, "pg")})`
      : `database: ${describeDatabaseUrl(server.url)}`,
  );
  const services: Services = { db: null, web: null, worker: null, workerId: null };
  let stopping = false;
  const shutdown = async (code: number, why: string) => {
    if (stopping) return;
    stopping = true;
    say(`stopping (${why}): the web process and the worker drain, then the database stops`);
    await stopServices(services, say);
    await stopDatabase(server, say);
    say("stopped");
    process.exit(code);
  };
  // Signals sent to this process alone (kill <pid>, a service manager) stop it as Ctrl-C does.
  process.on("SIGINT", () => void shutdown(0, "SIGINT"));
  process.on("SIGTERM", () => void shutdown(0, "SIGTERM"));
  try {
    await startServices(env, server, services, (reason) => {
      if (stopping) return;
      console.error(`opentinker: ${reason}; stopping`);
      void shutdown(1, reason);
    });
  } catch (error) {
    // Don't leave an embedded cluster (or a child) running behind a failed start; the error says why.
    const quiet = () => {};
    await stopServices(services, quiet);
    await stopDatabase(server, quiet);
    throw error;
  }
}

async function prepare(env: StartEnv, server: DatabaseServer): Promise<NodeJS.ProcessEnv> {
  await setUpDatabase(server.url, env, say);

  const childEnv = inheritedEnv({
    DATABASE_URL: server.url,
    HOST: env.HOST,
    PORT: String(env.PORT),
    OPENTINKER_DATA_DIR: env.OPENTINKER_DATA_DIR,
    OPENTINKER_SESSION_SECRET:
      env.OPENTINKER_SESSION_SECRET ?? (await sessionSecret(env.OPENTINKER_DATA_DIR)),
    NEXT_TELEMETRY_DISABLED: "1",
    TURBO_TELEMETRY_DISABLED: "1",
  });
  if (env.OPENTINKER_SKIP_BUILD) say("using the existing dashboard build (OPENTINKER_SKIP_BUILD=1)");
  else {
    say("building the dashboard (cached after the first run)");
    const turbo = path.join(REPO_ROOT, "node_modules", ".bin", "turbo");
    const built = await withBuildLock(() =>
      runCommand(turbo, ["run", "build", "--output-logs=errors-only"], childEnv, REPO_ROOT),
    );
    if (built !== 0) throw new Error(`the build failed (exit ${built}); see the output above`);
  }
  return childEnv;
}

/**
 * Starts the web process and one worker under supervision: each is restarted
 * with backoff if it dies once up (a lost worker's rows are released at once,
 * so its jobs resume elsewhere), while the other keeps serving.
 */
async function startServices(
  env: StartEnv,
  server: DatabaseServer,
  services: Services,
  failed: (reason: string) => void,
): Promise<void> {
  const childEnv = await prepare(env, server);
  const db = createDb(server.url);
  services.db = db;
  const url = await new Promise<string>((resolve, reject) => {
    const failedToStart = (reason: string) => {
      reject(new Error(reason));
      failed(reason);
    };
    const web: Supervised = new Supervised(
      "web",
      () =>
        spawnService(path.join(REPO_ROOT, "apps/web/src/server/main.ts"), childEnv, (line) => {
          console.log(line);
          const ready = /^web: listening on (\S+)$/.exec(line);
          if (!ready?.[1]) return;
          web.markReady();
          resolve(ready[1]);
        }),
      { say, failedToStart },
    );
    const worker: Supervised = new Supervised(
      "worker",
      () =>
        spawnService(path.join(REPO_ROOT, "apps/worker/src/main.ts"), childEnv, (line) => {
          console.log(line);
          const ready = /^worker: registered as (\S+)/.exec(line);
          if (!ready?.[1]) return;
          services.workerId = ready[1];
          worker.markReady();
        }),
      {
        say,
        failedToStart,
        // Its jobs go back to the queue and its adapters free up now, not after its heartbeat goes stale.
        afterExit: async () => {
          if (services.workerId) await releaseLostWorker(db, services.workerId);
        },
      },
    );
    services.web = web;
    services.worker = worker;
    web.start();
    worker.start();
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
