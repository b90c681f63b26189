// The web process's API listener without the Next.js pages (which need a build):
// `node --import tsx bench/web-server.ts <database url>`; prints
// `web: listening on <url>` once it accepts connections, stops on SIGTERM.
import { randomBytes } from "node:crypto";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { getDb, RequestWaiter } from "@opentinker/db";
import { openStore, readStoreEnv } from "@opentinker/store";
// The bench drives the whole control plane, so it starts the web side too.
import { createRequestListener } from "../../apps/web/src/server/http.ts";

const url = process.argv[2];
if (!url) throw new Error("usage: web-server.ts <database url>");
const db = getDb(url);
const waiter = new RequestWaiter(db, url);
// API keys authenticate the bench's calls; no dashboard session ever needs this secret.
const sessionSecret = randomBytes(32).toString("hex");
// The bench's workers use the default store; downloads (which it never makes) would read there.
const store = await openStore(readStoreEnv(), { dataDir: path.resolve(".data") });
const server = createServer(createRequestListener({ db, waiter, sessionSecret, store }));
server.listen(0, "127.0.0.1", () => {
  console.log(`web: listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
process.on("SIGTERM", () => {
  server.close(() => void Promise.all([waiter.close(), db.$disconnect()]).finally(() => process.exit(0)));
  server.closeAllConnections();
});
