// Web process: the API routes and the Next.js dashboard in one HTTP server.
import { existsSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { getDb, RequestWaiter } from "@opentinker/db";
import next from "next";
import { readWebEnv } from "../env.ts";
import { AccessWatch } from "./api/access.ts";
import { createRequestListener } from "./http.ts";
import { attachMetricsRelay } from "./realtime/metrics-relay.ts";

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

async function main(): Promise<void> {
  const env = readWebEnv();
  const db = getDb(env.DATABASE_URL);
  const waiter = new RequestWaiter(db, env.DATABASE_URL);
  const access = new AccessWatch(env.DATABASE_URL);
  await access.start();
  if (!existsSync(path.join(APP_DIR, ".next", "BUILD_ID"))) {
    throw new Error("the dashboard is not built: run `npm run build` (npm start does this for you)");
  }
  const app = next({ dev: false, dir: APP_DIR, hostname: env.HOST, port: env.PORT });
  await app.prepare();
  const handle = app.getRequestHandler();
  const server = createServer(
    createRequestListener({
      db,
      waiter,
      sessionSecret: env.OPENTINKER_SESSION_SECRET,
      secureCookies: env.OPENTINKER_SECURE_COOKIES,
      remoteEnvHosts: env.OPENTINKER_REMOTE_ENV_HOSTS,
      tinkerModels: env.OPENTINKER_TINKER_MODELS,
      pages: (req, res) => handle(req, res),
    }),
  );
  const relay = await attachMetricsRelay(server, {
    db,
    url: env.DATABASE_URL,
    sessionSecret: env.OPENTINKER_SESSION_SECRET,
    access,
  });
  server.listen(env.PORT, env.HOST, () => {
    const address = server.address();
    const port = typeof address === "object" && address ? address.port : env.PORT;
    // The start script waits for this exact line.
    console.log(`web: listening on http://${env.HOST}:${port}`);
  });

  const shutdown = () => {
    // The relay goes first: its open WebSockets would otherwise hold server.close open.
    void relay.close().finally(() => {
      server.close(
        () =>
          void Promise.all([waiter.close(), access.close(), db.$disconnect()]).finally(() => process.exit(0)),
      );
      server.closeAllConnections();
    });
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

main().catch((error: unknown) => {
  console.error(`web: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
