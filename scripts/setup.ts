// `npm run setup`: migrations, demo team and base models on DATABASE_URL, for
// a deployment whose web processes and workers start on their own (one run per
// release, before they roll out). `npm start` does the same itself.
import { describeDatabaseUrl } from "@opentinker/db";
import { readClusterEnv } from "./env.ts";
import { setUpDatabase } from "./setup-database.ts";

const say = (line: string) => console.log(`setup: ${line}`);

try {
  const env = readClusterEnv();
  say(`database: ${describeDatabaseUrl(env.DATABASE_URL)}`);
  await setUpDatabase(env.DATABASE_URL, env, say);
} catch (error) {
  console.error(`setup: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
