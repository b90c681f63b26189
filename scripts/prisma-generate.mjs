// postinstall: generate the Prisma client into packages/db/src/generated.
import { spawnSync } from "node:child_process";

const result = spawnSync(process.execPath, ["scripts/prisma-cli.mjs", "generate"], { stdio: "inherit" });
if (result.status !== 0) {
  console.error("prisma generate failed: the database client in packages/db/src/generated is missing");
  process.exit(result.status ?? 1);
}
