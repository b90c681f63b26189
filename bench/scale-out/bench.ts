// npm run -s bench:scale-out -- [--json] [--only=store,failover,web]
// What can be measured of scale-out on one machine: snapshot publish and load
// latency, local folder against the S3-compatible store (`store`); the time
// from a worker's death to its adapter serving again on another worker
// (`failover`); two web processes against one (`web`). Postgres:
// DATABASE_URL's server when set, else an embedded cluster; each section uses
// a fresh database and drops it. Progress goes to stderr; stdout gets one JSON
// object with --json, else the same object indented.
import { machineInfo } from "@opentinker/kernels";
import { openBenchServer } from "../control-plane/postgres.ts";
import { progress } from "../control-plane/stats.ts";
import { Teardown } from "../control-plane/teardown.ts";
import { benchFailover } from "./failover.ts";
import { benchStore } from "./store.ts";
import { benchWeb } from "./web.ts";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const sections = arg("only")?.split(",") ?? ["store", "failover", "web"];

const STORE = { sizesMb: [1, 16, 64], rounds: 5 };
const FAILOVER = { rounds: 3, heartbeatMs: 500, staleAfterMs: 3000 };
const WEB = { rounds: 4, clients: 20, perClient: 10, events: 30 };

async function main(): Promise<void> {
  const teardown = new Teardown();
  const stop = () => void teardown.run().finally(() => process.exit(130));
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  try {
    const server = await openBenchServer(process.env.DATABASE_URL || undefined, teardown);
    const started = new Date().toISOString();
    const result: Record<string, unknown> = {
      command: `npm run -s bench:scale-out -- ${process.argv.slice(2).join(" ")}`.trim(),
      started,
      machine: machineInfo(),
      node: process.version,
      postgres: server.embedded ? "embedded" : "DATABASE_URL",
    };
    if (sections.includes("store")) result.store = await benchStore(STORE, teardown);
    if (sections.includes("failover")) result.failover = await benchFailover(server, FAILOVER, teardown);
    if (sections.includes("web")) result.web = await benchWeb(server, WEB, teardown);
    progress("done");
    console.log(JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2));
  } finally {
    await teardown.run();
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    console.error(`bench: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
    process.exit(1);
  },
);
