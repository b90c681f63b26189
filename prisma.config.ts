// Prisma CLI configuration. The CLI's own schema-engine binary cannot be fetched
// offline, so it runs its JavaScript schema engine over our pg driver adapter
// (see packages/db/README.md). Runtime code never goes through this file.
import { PrismaPg } from "@prisma/adapter-pg";
import { defineConfig } from "prisma/config";
import { readDbEnv } from "./packages/db/src/env.ts";
import { PrismaCompatiblePool } from "./packages/db/src/pg-pool.ts";

export default defineConfig({
  schema: "prisma/schema.prisma",
  migrations: { path: "prisma/migrations" },
  experimental: { adapter: true },
  engine: "js",
  async adapter() {
    const connectionString = readDbEnv().DATABASE_URL ?? "postgresql://postgres@127.0.0.1:5432/postgres";
    return new PrismaPg(new PrismaCompatiblePool({ connectionString }));
  },
});
