// The whole control plane as deployed: a migrated database of its own, the web
// process's API listener and a worker process (both real, each its own
// process) over the tiny test model; calls go through the REST API.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApiKey, createDb, createTeam, type Db, migrate, registerBaseModel } from "@opentinker/db";
import { type BaseModel, describeBaseModel, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { type BenchServer, freshDatabase } from "./postgres.ts";
import { startService } from "./services.ts";
import { epochMs } from "./stats.ts";
import type { Teardown } from "./teardown.ts";

const WORKER_MAIN = fileURLToPath(new URL("../../apps/worker/src/main.ts", import.meta.url));
const WEB_SERVER = fileURLToPath(new URL("./web-server.ts", import.meta.url));
const TRACE_HOOK = fileURLToPath(new URL("./trace-hook.ts", import.meta.url));

export const BASE = "tiny";

/** Client-side instants of one call (epoch ms), and the request it made. */
export interface CallTiming {
  requestId: string;
  sent: number;
  accepted: number;
  done: number;
}

/** Where one request's time went, from the Request row's timestamps (ms precision). */
export interface RequestPhases {
  /** HTTP in, authentication, validation, up to the row's insert in the enqueue transaction. */
  webToInsert: number;
  /** Rest of the enqueue transaction, commit, queue pickup, until the worker claims the row. */
  insertToClaim: number;
  /** The claim, the engine's work and the result's serialisation, until the finish statement. */
  claimToFinish: number;
  /** Finish + NOTIFY, the waiter's wake-up, its read and the HTTP response. */
  finishToClient: number;
}

export interface ControlPlaneOptions {
  worker: { concurrency: number; capacity: number };
  /** Directory where the processes write their query and engine timings (trace-hook.ts). */
  traceDir?: string;
}

export class BenchControlPlane {
  private constructor(
    readonly db: Db,
    readonly base: BaseModel,
    /** Process ids of the web process and the worker. */
    readonly pids: { web: number; worker: number },
    private readonly apiUrl: string,
    private readonly key: string,
  ) {}

  static async start(
    server: BenchServer,
    teardown: Teardown,
    options: ControlPlaneOptions,
  ): Promise<BenchControlPlane> {
    const url = await freshDatabase(server, "cp", teardown);
    await migrate(url);
    const dir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-"));
    teardown.defer("remove the model and store", () => rm(dir, { recursive: true, force: true }));
    const model = await writeTinyModel(path.join(dir, "model"), { ...TINY_MODEL, seed: 2 });
    const db = createDb(url);
    teardown.defer("disconnect", () => db.$disconnect());
    await registerBaseModel(db, await describeBaseModel(BASE, model.dir));
    const team = await createTeam(db, { slug: "bench", name: "bench" });
    const { key } = await createApiKey(db, team.id, { name: "bench" });
    const trace = options.traceDir
      ? { nodeArgs: ["--import", TRACE_HOOK], env: { OPENTINKER_BENCH_TRACE: options.traceDir } }
      : { nodeArgs: [], env: {} };
    const [web, worker] = await Promise.all([
      startService(
        "web process",
        {
          entry: WEB_SERVER,
          args: [url],
          nodeArgs: trace.nodeArgs,
          env: { ...process.env, ...trace.env },
          ready: /^web: listening on (\S+)/,
        },
        teardown,
      ),
      startService(
        "worker",
        {
          entry: WORKER_MAIN,
          nodeArgs: trace.nodeArgs,
          env: {
            ...process.env,
            ...trace.env,
            DATABASE_URL: url,
            OPENTINKER_DATA_DIR: dir,
            WORKER_CONCURRENCY: String(options.worker.concurrency),
            WORKER_CAPACITY: String(options.worker.capacity),
          },
          ready: /^worker: registered as (\S+)/,
        },
        teardown,
      ),
    ]);
    const base = await loadBaseModel(model.dir, BASE);
    return new BenchControlPlane(db, base, { web: web.pid, worker: worker.pid }, web.ready, key);
  }

  async post<T>(route: string, body: unknown): Promise<T> {
    const response = await fetch(`${this.apiUrl}/api${route}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    if (response.status !== 200) throw new Error(`POST ${route}: ${response.status} ${text}`);
    return JSON.parse(text) as T;
  }

  /** One API call that returns a future, waited for: POST it, then POST /futures/{id}/wait. */
  async call(route: string, body: unknown): Promise<CallTiming> {
    const sent = epochMs();
    // As the SDK does: the result in the same round trip when it is ready in time.
    const { requestId, result } = await this.post<{
      requestId: string;
      result?: { status: string; error: string | null };
    }>(route, { ...(body as object), waitMs: 30_000 });
    const accepted = epochMs();
    const state =
      result ??
      (await this.post<{ status: string; error: string | null }>(`/v1/futures/${requestId}/wait`, {
        timeoutMs: 30_000,
      }));
    if (state.status !== "SUCCEEDED") throw new Error(`${route}: ${state.status}: ${state.error}`);
    return { requestId, sent, accepted, done: epochMs() };
  }

  /**
   * Each call's phases, from its Request row's timestamps (millisecond precision;
   * createdAt and startedAt are the web's and the worker's clocks, finishedAt the
   * database's). Calls whose phases do not fit in their round trip (a database
   * on another clock or time zone) are left out.
   */
  async phases(calls: readonly CallTiming[]): Promise<RequestPhases[]> {
    const rows = await this.db.request.findMany({
      where: { id: { in: calls.map((c) => c.requestId) } },
      select: { id: true, createdAt: true, startedAt: true, finishedAt: true },
    });
    const byId = new Map(rows.map((r) => [r.id, r]));
    return calls.flatMap((call) => {
      const row = byId.get(call.requestId);
      if (!row?.startedAt || !row.finishedAt) return [];
      const phases = {
        webToInsert: row.createdAt.getTime() - call.sent,
        insertToClaim: row.startedAt.getTime() - row.createdAt.getTime(),
        claimToFinish: row.finishedAt.getTime() - row.startedAt.getTime(),
        finishToClient: call.done - row.finishedAt.getTime(),
      };
      const fits = Object.values(phases).every((ms) => ms > -2 && ms < call.done - call.sent + 2);
      return fits ? [phases] : [];
    });
  }
}
