// The web process's server, apart from the dashboard's pages: the API, the
// realtime relay (joined to the other web processes through Postgres), and a
// drain that lets in-flight requests finish. main.ts adds the Next.js pages;
// tests and benches run it as it is.
import { createServer } from "node:http";
import { getDb, RequestWaiter } from "@opentinker/db";
import { openStore, readStoreEnv } from "@opentinker/store";
import type { WebEnv } from "../env.ts";
import { AccessWatch } from "./api/access.ts";
import { createRequestListener, type PageHandler } from "./http.ts";
import { attachMetricsRelay, type MetricsRelay } from "./realtime/metrics-relay.ts";

export interface WebServer {
  url: string;
  relay: MetricsRelay;
  /**
   * Stops taking work: readiness answers 503, realtime clients are sent to
   * reconnect (elsewhere), new connections are refused, and requests in flight
   * get up to OPENTINKER_DRAIN_MS to finish before their connections close.
   */
  drain(): Promise<void>;
}

export async function startWebServer(env: WebEnv, pages?: PageHandler): Promise<WebServer> {
  const db = getDb(env.DATABASE_URL);
  const waiter = new RequestWaiter(db, env.DATABASE_URL);
  const store = await openStore(readStoreEnv(), { dataDir: env.OPENTINKER_DATA_DIR });
  const access = new AccessWatch(env.DATABASE_URL);
  await access.start();
  let draining = false;
  const server = createServer(
    createRequestListener({
      db,
      waiter,
      store,
      sessionSecret: env.OPENTINKER_SESSION_SECRET,
      secureCookies: env.OPENTINKER_SECURE_COOKIES,
      remoteEnvHosts: env.OPENTINKER_REMOTE_ENV_HOSTS,
      tinkerModels: env.OPENTINKER_TINKER_MODELS,
      draining: () => draining,
      ...(pages ? { pages } : {}),
    }),
  );
  let inFlight = 0;
  const settled: (() => void)[] = [];
  server.on("request", (_req, res) => {
    inFlight++;
    res.once("close", () => {
      inFlight--;
      if (inFlight === 0) for (const wake of settled.splice(0)) wake();
    });
  });
  const relay = await attachMetricsRelay(server, {
    db,
    url: env.DATABASE_URL,
    sessionSecret: env.OPENTINKER_SESSION_SECRET,
    access,
  });
  const url = await new Promise<string>((resolve, reject) => {
    server.once("error", reject);
    server.listen(env.PORT, env.HOST, () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : env.PORT;
      resolve(`http://${env.HOST}:${port}`);
    });
  });

  const drain = async () => {
    draining = true;
    // The relay goes first: its open WebSockets would otherwise hold server.close open.
    await relay.close();
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeIdleConnections();
    if (inFlight > 0)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, env.OPENTINKER_DRAIN_MS);
        settled.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    server.closeAllConnections();
    await closed;
    await Promise.all([waiter.close(), access.close(), db.$disconnect()]);
  };
  return { url, relay, drain };
}
