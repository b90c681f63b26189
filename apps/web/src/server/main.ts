// Web process: the API routes and the Next.js dashboard in one HTTP server.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import next from "next";
import { readWebEnv } from "../env.ts";
import { startWebServer } from "./serve.ts";

const APP_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

async function main(): Promise<void> {
  const env = readWebEnv();
  if (!existsSync(path.join(APP_DIR, ".next", "BUILD_ID"))) {
    throw new Error("the dashboard is not built: run `npm run build` (npm start does this for you)");
  }
  const app = next({ dev: false, dir: APP_DIR, hostname: env.HOST, port: env.PORT });
  await app.prepare();
  const handle = app.getRequestHandler();
  const web = await startWebServer(env, (req, res) => handle(req, res));
  // The start script waits for this exact line.
  console.log(`web: listening on ${web.url}`);

  let stopping = false;
  const shutdown = () => {
    if (stopping) return;
    stopping = true;
    void web.drain().finally(() => process.exit(0));
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}

main().catch((error: unknown) => {
  console.error(`web: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
