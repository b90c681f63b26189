// npm run db:migrate — applies committed migrations to DATABASE_URL, or to the
// embedded Postgres that `npm start` uses when it is unset.
import path from "node:path";
import { fileURLToPath } from "node:url";
import { openDatabaseServer } from "../database-server.ts";
import { describeDatabaseUrl } from "../database-url.ts";
import { readDbEnv } from "../env.ts";
import { migrate } from "../migrate.ts";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
const env = readDbEnv();
const server = await openDatabaseServer({
  url: env.DATABASE_URL,
  dataDir: env.OPENTINKER_DATA_DIR ?? path.join(repoRoot, ".data"),
});
try {
  const result = await migrate(server.url);
  const target = describeDatabaseUrl(server.url);
  console.log(
    result.applied.length ? `applied to ${target}: ${result.applied.join(", ")}` : `${target} is up to date`,
  );
} finally {
  await server.stop();
}
