// A team's share of the database pool (issue 44). The web process runs each call
// of a team "as" that team (`asTeam`, over AsyncLocalStorage, from the API's team
// procedures and the Tinker front); the pool then lends one team at most `share`
// connections at once (a query holds one while it runs, an interactive
// transaction until it ends). The team's further queries wait in a line of its
// own, first come first served, never in the pool's: so one team's burst (the 16
// chunks of a batch, 12 new models at once) holds at most its share, and any
// other team's next query takes the next connection that frees. Work done as no
// team (workers, sign-in, the key lookup, the jobs' relay) is not counted.
//
// No code path may hold a pool connection while it waits for another (a team at
// its share would wait for itself): a transaction's body uses its own client only.
import { AsyncLocalStorage } from "node:async_hooks";
import pg from "pg";

const currentTeam = new AsyncLocalStorage<string>();

/** Runs `run` as a call of `teamId`: its queries draw on the team's share of the pool. */
export function asTeam<T>(teamId: string, run: () => T): T {
  return currentTeam.run(teamId, run);
}

type Leave = () => void;

interface Line {
  held: number;
  /** Callers waiting for a place, first come first served; each is handed the place of one that leaves. */
  waiting: (() => void)[];
}

/** How many connections each team holds, and who waits for one. */
export class TeamPoolShares {
  private readonly lines = new Map<string, Line>();

  constructor(readonly share: number) {
    if (!Number.isInteger(share) || share < 1)
      throw new RangeError(`share must be a positive integer (got ${share})`);
  }

  /** Waits for a place in the current team's share; resolves to the function that gives it back (once). */
  async enter(): Promise<Leave> {
    const teamId = currentTeam.getStore();
    if (teamId === undefined) return () => {};
    let line = this.lines.get(teamId);
    if (!line) {
      line = { held: 0, waiting: [] };
      this.lines.set(teamId, line);
    }
    if (line.held < this.share) line.held++;
    else {
      const queued = line;
      await new Promise<void>((resolve) => queued.waiting.push(resolve));
    }
    return this.leaving(teamId, line);
  }

  /** Connections the team holds now (for tests and diagnostics). */
  held(teamId: string): number {
    return this.lines.get(teamId)?.held ?? 0;
  }

  private leaving(teamId: string, line: Line): Leave {
    let left = false;
    return () => {
      if (left) return;
      left = true;
      const next = line.waiting.shift();
      if (next) next();
      else if (--line.held === 0) this.lines.delete(teamId);
    };
  }
}

/**
 * A pg pool that lends each team at most its share of connections. Prisma's
 * driver adapter uses the promise forms only: `query(config, values)` for a
 * statement, `connect()` for a transaction's client.
 */
export class TeamSharedPool extends pg.Pool {
  constructor(
    config: pg.PoolConfig,
    readonly shares: TeamPoolShares,
  ) {
    super(config);
  }

  // biome-ignore lint/suspicious/noExplicitAny: mirrors pg.Pool's overloaded signature
  override query(...args: any[]): any {
    // The callback form is not Prisma's: left as it is.
    if (typeof args[args.length - 1] === "function") return super.query(...(args as [string]));
    return this.shares.enter().then(async (leave) => {
      try {
        return await super.query(...(args as [string]));
      } finally {
        leave();
      }
    });
  }

  // biome-ignore lint/suspicious/noExplicitAny: mirrors pg.Pool's overloaded signature
  override connect(...args: any[]): any {
    // With a callback: pg's own query() checking out a client, already counted there.
    if (args.length > 0) return super.connect(...(args as [() => void]));
    return this.shares.enter().then(async (leave) => {
      try {
        const client = await super.connect();
        const release = client.release;
        client.release = (error?: Error | boolean) => {
          const done = release.call(client, error);
          leave();
          return done;
        };
        return client;
      } catch (error) {
        leave();
        throw error;
      }
    });
  }
}
