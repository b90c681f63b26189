// A small cluster for the scale-out bench: a database of its own, the S3
// server, the web processes and worker hosts it asks for (each a real process),
// and the API calls it makes through them.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApiKey, createDb, createTeam, type Db, migrate, registerBaseModel } from "@opentinker/db";
import { describeBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { type S3TestServer, startS3Server } from "@opentinker/store/testing";
import { type BenchServer, freshDatabase } from "../control-plane/postgres.ts";
import { type Service, startService } from "../control-plane/services.ts";
import { epochMs, sleep } from "../control-plane/stats.ts";
import type { Teardown } from "../control-plane/teardown.ts";

const API_MAIN = fileURLToPath(new URL("../../apps/web/src/server/api-main.ts", import.meta.url));
const WORKER_HOST = fileURLToPath(new URL("../../scripts/worker-host.ts", import.meta.url));
export const BASE = "tiny";

export interface CallOutcome<T> {
  ok: boolean;
  output?: T;
  error?: string;
}

export class Cluster {
  private hostCount = 0;
  private webCount = 0;

  private constructor(
    readonly db: Db,
    readonly url: string,
    readonly dir: string,
    readonly s3: S3TestServer,
    readonly key: string,
    readonly teamId: string,
    private readonly env: Record<string, string>,
    private readonly teardown: Teardown,
  ) {}

  /** `env`: settings every process gets (heartbeat, staleness). */
  static async start(server: BenchServer, teardown: Teardown, env: Record<string, string>): Promise<Cluster> {
    const url = await freshDatabase(server, "scale", teardown);
    await migrate(url);
    const dir = await mkdtemp(path.join(tmpdir(), "opentinker-bench-scale-"));
    teardown.defer("remove the cluster's folder", () => rm(dir, { recursive: true, force: true }));
    const s3 = await startS3Server();
    teardown.defer("stop the S3 server", () => s3.stop());
    const model = await writeTinyModel(path.join(dir, "model"), { ...TINY_MODEL, seed: 2 });
    const db = createDb(url);
    teardown.defer("disconnect", () => db.$disconnect());
    await registerBaseModel(db, await describeBaseModel(BASE, model.dir));
    const team = await createTeam(db, { slug: "bench", name: "bench" });
    const { key } = await createApiKey(db, team.id, { name: "bench" });
    return new Cluster(db, url, dir, s3, key, team.id, { ...env, ...s3.env("bench") }, teardown);
  }

  /** A web process (API and realtime, no pages), stopped by the teardown. */
  startWeb(teardown = this.teardown): Promise<Service> {
    const n = ++this.webCount;
    return startService(
      `web process ${n}`,
      {
        entry: API_MAIN,
        env: {
          ...process.env,
          ...this.env,
          DATABASE_URL: this.url,
          OPENTINKER_SESSION_SECRET: "scale-out-bench-session-secret-0123456789",
          OPENTINKER_DATA_DIR: path.join(this.dir, `web-${n}`),
          PORT: "0",
          OPENTINKER_DRAIN_MS: "1000",
        },
        ready: /^web: listening on (\S+)/,
      },
      teardown,
    );
  }

  /** A worker host (`npm run worker`: a supervised worker), in a process group of its own. */
  startWorkerHost(name = `host-${++this.hostCount}`): Promise<Service> {
    return startService(
      `worker host ${name}`,
      {
        entry: WORKER_HOST,
        env: {
          ...process.env,
          ...this.env,
          DATABASE_URL: this.url,
          OPENTINKER_DATA_DIR: path.join(this.dir, name),
          WORKER_HOST: name,
          WORKER_CONCURRENCY: "16",
          // Every round places adapters of its own; none is released in between.
          WORKER_CAPACITY: "64",
        },
        ready: /^worker: registered as (\S+)/,
        detached: true,
      },
      this.teardown,
    );
  }

  async post<T>(web: string, route: string, body: unknown): Promise<{ status: number; body: T }> {
    const response = await fetch(`${web}/api${route}`, {
      method: "POST",
      headers: { authorization: `Bearer ${this.key}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** One call that returns a future, waited for (its result inline when ready in time). */
  async call<T>(web: string, route: string, body: unknown): Promise<CallOutcome<T>> {
    type State = { status: string; output?: T; error: string | null };
    const accepted = await this.post<{ requestId: string; result?: State; error?: string }>(web, route, {
      ...(body as object),
      waitMs: 30_000,
    });
    if (accepted.status !== 200)
      return { ok: false, error: `${accepted.status} ${JSON.stringify(accepted.body)}` };
    const state =
      accepted.body.result ??
      (await this.post<State>(web, `/v1/futures/${accepted.body.requestId}/wait`, { timeoutMs: 30_000 }))
        .body;
    return state.status === "SUCCEEDED"
      ? { ok: true, ...(state.output === undefined ? {} : { output: state.output }) }
      : { ok: false, error: `${state.status}: ${state.error}` };
  }

  async mustCall<T>(web: string, route: string, body: unknown): Promise<T> {
    const outcome = await this.call<T>(web, route, body);
    if (!outcome.ok) throw new Error(`${route}: ${outcome.error}`);
    return outcome.output as T;
  }

  /** Milliseconds from `since` (epoch ms) until `call` first succeeds, retrying every `everyMs`. */
  async until(since: number, call: () => Promise<CallOutcome<unknown>>, everyMs = 50, maxMs = 120_000) {
    for (;;) {
      const outcome = await call();
      if (outcome.ok) return epochMs() - since;
      if (epochMs() - since > maxMs) throw new Error(`no success within ${maxMs} ms: ${outcome.error}`);
      await sleep(everyMs);
    }
  }
}

export const DATUM = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 20, 30, 40, 50, 60, 70, 80] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [20, 30, 40, 50, 60, 70, 80, 90] },
    weights: { dtype: "float32", data: [1, 1, 1, 1, 1, 1, 1, 1] },
  },
};
