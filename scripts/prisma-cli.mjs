// Runs the Prisma CLI offline. The CLI wants to download native engines at start;
// our generator needs none (engineType "client") and the schema engine runs in JS
// over the driver adapter in prisma.config.ts, so point the engine variables at an
// existing file to stop the download. Usage: node scripts/prisma-cli.mjs <args…>
import { spawnSync } from "node:child_process";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const cli = require.resolve("prisma/build/index.js");
const env = {
  ...process.env,
  PRISMA_HIDE_UPDATE_MESSAGE: "1",
  PRISMA_ENGINES_CHECKSUM_IGNORE_MISSING: "1",
  PRISMA_QUERY_ENGINE_LIBRARY: process.env.PRISMA_QUERY_ENGINE_LIBRARY ?? process.execPath,
  PRISMA_SCHEMA_ENGINE_BINARY: process.env.PRISMA_SCHEMA_ENGINE_BINARY ?? process.execPath,
};
const result = spawnSync(process.execPath, [cli, ...process.argv.slice(2)], { stdio: "inherit", env });
process.exit(result.status ?? 1);
