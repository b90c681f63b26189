// A web process without the dashboard's pages (which need a Next.js build):
// the same server main.ts runs — the API, the realtime relay joined to the
// other web processes, the drain on SIGTERM. For API-only processes (programs'
// traffic), the scale-out tests and the bench, which start several.
import { readWebEnv } from "../env.ts";
import { startWebServer } from "./serve.ts";

const web = await startWebServer(readWebEnv());
console.log(`web: listening on ${web.url}`);
let stopping = false;
const stop = () => {
  if (stopping) return;
  stopping = true;
  void web.drain().finally(() => process.exit(0));
};
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
