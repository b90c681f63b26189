// npm run db:new-migration -- <name>
// Writes prisma/migrations/<timestamp>_<name>/migration.sql with the SQL that takes
// the schema as of the last committed migration to prisma/schema.prisma. (Prisma's
// own `migrate dev` needs engine binaries and a shadow database we cannot use
// offline; this diff runs in the CLI's JavaScript engine.) Hand-written SQL, such as
// triggers, goes at the end of the file under a "Hand-written" heading.
import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";

const name = process.argv[2];
if (!name || !/^[a-z0-9_]+$/.test(name)) {
  console.error("usage: npm run db:new-migration -- <name in lower_snake_case>");
  process.exit(2);
}
const scratch = mkdtempSync(path.join(tmpdir(), "ot-migration-"));
const lastCommit = execFileSync("git", ["log", "-1", "--format=%H", "--", "prisma/migrations"])
  .toString()
  .trim();
const from = ["--from-empty"];
if (lastCommit) {
  const previous = path.join(scratch, "previous.prisma");
  writeFileSync(previous, execFileSync("git", ["show", `${lastCommit}:prisma/schema.prisma`]));
  from.splice(0, 1, "--from-schema-datamodel", previous);
}
const output = path.join(scratch, "migration.sql");
const diff = spawnSync(
  process.execPath,
  [
    "scripts/prisma-cli.mjs",
    "migrate",
    "diff",
    ...from,
    "--to-schema-datamodel",
    "prisma/schema.prisma",
    "--script",
    "--output",
    output,
  ],
  { stdio: "inherit" },
);
if (diff.status !== 0) process.exit(diff.status ?? 1);
const sql = readFileSync(output, "utf8");
if (!sql.replace(/--.*$/gm, "").trim()) {
  console.log("no schema changes since the last committed migration");
  process.exit(0);
}
const stamp = new Date().toISOString().replace(/\D/g, "").slice(0, 14);
const dir = path.join("prisma", "migrations", `${stamp}_${name}`);
mkdirSync(dir, { recursive: true });
writeFileSync(path.join(dir, "migration.sql"), sql);
console.log(`wrote ${dir}/migration.sql — review it, then npm run db:migrate`);
