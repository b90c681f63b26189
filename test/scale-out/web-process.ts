// A real web process without the dashboard's pages (which need a Next.js
// build): the same server main.ts runs — API, realtime relay joined to the
// other web processes, drain on SIGTERM. Tests and the scale-out bench start
// several of these.
import { readWebEnv } from "../../apps/web/src/env.ts";
import { startWebServer } from "../../apps/web/src/server/serve.ts";

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
