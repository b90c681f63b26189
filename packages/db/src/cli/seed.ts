// npm run db:seed — creates the demo team, user and API key (printed once).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDb } from "../client.ts";
import { openDatabaseServer } from "../database-server.ts";
import { readDbEnv } from "../env.ts";
import { seed } from "../seed.ts";

const repoRoot = fileURLToPath(new URL("../../../../", import.meta.url));
const env = readDbEnv();
const server = await openDatabaseServer({
  url: env.DATABASE_URL,
  dataDir: env.OPENTINKER_DATA_DIR ?? path.join(repoRoot, ".data"),
});
const db = createDb(server.url);
try {
  const result = await seed(db);
  console.log(
    result.createdApiKey ? `demo API key (shown once): ${result.createdApiKey}` : "demo team already seeded",
  );
} finally {
  await db.$disconnect();
  await server.stop();
}
