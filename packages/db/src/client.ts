import { PrismaPg } from "@prisma/adapter-pg";
import { PrismaClient } from "./generated/prisma/client.ts";

export type Db = PrismaClient;
/** A transaction client or the full client: query helpers accept either. */
export type DbTx = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

export function createDb(url: string): Db {
  return new PrismaClient({ adapter: new PrismaPg({ connectionString: url }) });
}

const cache = globalThis as typeof globalThis & { __opentinkerDb?: { url: string; db: Db } };

/**
 * The process's one Prisma client. Kept on globalThis so that a dev server's hot
 * reload reuses it instead of leaking connection pools.
 */
export function getDb(url: string): Db {
  const cached = cache.__opentinkerDb;
  if (cached && cached.url === url) return cached.db;
  const db = createDb(url);
  cache.__opentinkerDb = { url, db };
  return db;
}
