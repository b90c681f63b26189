// Loaded (`--import`) into the web and worker processes by `bench --only=trace`:
// records when each Postgres query was sent and answered, and in a worker each
// engine call, and writes them on exit to <OPENTINKER_BENCH_TRACE>/<pid>.json.
import { writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { Sampler, Trainer } from "@opentinker/engine";
import type pg from "pg";
import type { TraceEvent } from "./trace.ts";

const dir = process.env.OPENTINKER_BENCH_TRACE;
const events: TraceEvent[] = [];
const now = () => performance.timeOrigin + performance.now();

function sqlOf(config: unknown): string {
  const { text, name } =
    typeof config === "string" ? { text: config, name: undefined } : ((config ?? {}) as pg.QueryConfig);
  const sql = (text ?? "").replace(/\s+/g, " ").trim().slice(0, 80);
  return name ? `[${name}] ${sql}` : sql;
}

if (dir) {
  // One pg for the whole repository: Prisma's adapter and graphile-worker both use it.
  const { Client } = createRequire(import.meta.url)("pg") as typeof pg;
  const query = Client.prototype.query as (...args: unknown[]) => unknown;
  (Client.prototype as { query: unknown }).query = function (this: pg.Client, ...args: unknown[]) {
    const start = now();
    const sql = sqlOf(args[0]);
    const done = () => events.push({ kind: "query", sql, start, end: now() });
    const last = args.length - 1;
    const callback = args[last];
    if (typeof callback === "function") {
      args[last] = (...results: unknown[]) => {
        done();
        return callback(...results);
      };
      return query.apply(this, args);
    }
    const result = query.apply(this, args);
    if (result instanceof Promise) result.then(done, done);
    return result;
  };

  const timeEngine = <T extends object>(proto: T, method: keyof T & string) => {
    const original = proto[method] as (...args: unknown[]) => unknown;
    (proto as Record<string, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
      const start = now();
      const done = () => events.push({ kind: "engine", sql: method, start, end: now() });
      const result = original.apply(this, args);
      if (result instanceof Promise) result.then(done, done);
      else done();
      return result;
    };
  };
  timeEngine(Sampler.prototype, "sample");
  timeEngine(Trainer.prototype, "forwardBackward");

  process.on("exit", () => writeFileSync(path.join(dir, `${process.pid}.json`), JSON.stringify(events)));
}
