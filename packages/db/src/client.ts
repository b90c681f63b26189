import { PrismaPg } from "@prisma/adapter-pg";
import { type PoolSettings, poolSettings } from "./env.ts";
import { PrismaClient } from "./generated/prisma/client.ts";
import { TeamPoolShares, TeamSharedPool } from "./team-pool.ts";

export type Db = PrismaClient;
/** A transaction client or the full client: query helpers accept either. */
export type DbTx = Omit<PrismaClient, "$connect" | "$disconnect" | "$on" | "$transaction" | "$extends">;

/**
 * A Prisma client over a pool of `settings.poolSize` connections (from the
 * environment by default), each team's calls holding at most its share of them
 * (team-pool.ts), every statement cancelled past the statement timeout.
 */
export function createDb(url: string, settings: PoolSettings = poolSettings()): Db {
  const pool = new TeamSharedPool(
    { connectionString: url, max: settings.poolSize, statement_timeout: settings.statementTimeoutMs },
    new TeamPoolShares(settings.teamShare),
  );
  return new PrismaClient({
    adapter: new PrismaPg(pool, { disposeExternalPool: true }),
    transactionOptions: { maxWait: settings.transactionMaxWaitMs, timeout: settings.transactionTimeoutMs },
  });
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
