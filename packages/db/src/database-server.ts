import path from "node:path";
import { assertDatabaseReachable } from "./database-url.ts";
import { startEmbeddedPostgres } from "./embedded-postgres.ts";
import { findFreePort, isPortFree } from "./free-port.ts";

/** Port tried first for the embedded cluster, so a user's psql finds it. */
export const EMBEDDED_DEFAULT_PORT = 54329;

export interface DatabaseServer {
  url: string;
  embedded: boolean;
  /** Stops an embedded cluster this process started; no-op otherwise. */
  stop(): Promise<void>;
}

export interface DatabaseServerOptions {
  /** DATABASE_URL, when the user set one. */
  url?: string;
  /** Where the embedded cluster keeps its files (e.g. `<repo>/.data`). */
  dataDir: string;
  /** Database name on the embedded cluster. */
  database?: string;
  persistent?: boolean;
}

/**
 * The database this process should use: DATABASE_URL when set (checked to be
 * reachable), else an embedded Postgres under `dataDir/pg`.
 */
export async function openDatabaseServer(options: DatabaseServerOptions): Promise<DatabaseServer> {
  if (options.url) {
    await assertDatabaseReachable(options.url);
    return { url: options.url, embedded: false, stop: async () => {} };
  }
  const port = (await isPortFree(EMBEDDED_DEFAULT_PORT)) ? EMBEDDED_DEFAULT_PORT : await findFreePort();
  const handle = await startEmbeddedPostgres({
    dataDir: path.join(options.dataDir, "pg"),
    database: options.database ?? "opentinker",
    port,
    persistent: options.persistent ?? true,
  });
  return { url: handle.url, embedded: true, stop: handle.stop };
}
