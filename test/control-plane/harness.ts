// A real control plane for tests: a migrated database of its own, the web
// process's request listener on a free port, and worker processes (real
// `apps/worker` mains) over a tiny model written in the Hugging Face layout.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createApiKey, createTeam, RequestWaiter, registerBaseModel } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { describeBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import { LocalStore, type ObjectStore } from "@opentinker/store";
import { readWebEnv } from "../../apps/web/src/env.ts";
import { AccessWatch } from "../../apps/web/src/server/api/access.ts";
import { createRequestListener } from "../../apps/web/src/server/http.ts";

const WORKER_MAIN = fileURLToPath(new URL("../../apps/worker/src/main.ts", import.meta.url));
export const BASE = "tiny";
/** Seals the test servers' dashboard session cookies. */
export const SESSION_SECRET = "control-plane-tests-session-secret-0123456789";
/** Workers heartbeat fast in tests, and count as lost soon after they stop. */
const HEARTBEAT_MS = 200;
export const STALE_AFTER_MS = 1500;

export interface WorkerProcess {
  child: ChildProcess;
  id: string;
  output: string[];
  exited: Promise<number | null>;
}

export interface Team {
  id: string;
  slug: string;
  key: string;
}

export interface ApiResponse<T = unknown> {
  status: number;
  body: T;
}

export class ControlPlane {
  readonly workers: WorkerProcess[] = [];
  private constructor(
    readonly t: TestDatabase,
    readonly dir: string,
    readonly url: string,
    private readonly server: Server,
    private readonly waiter: RequestWaiter,
    private readonly access: AccessWatch,
  ) {}

  /** `store`: where the web side reads snapshots (default: the local store its workers write). */
  static async start(options: { modelSeed?: number; store?: ObjectStore } = {}): Promise<ControlPlane> {
    process.env.WORKER_STALE_AFTER_MS = String(STALE_AFTER_MS);
    const t = await createTestDatabase();
    const dir = await mkdtemp(path.join(tmpdir(), "opentinker-cp-"));
    const model = await writeTinyModel(path.join(dir, "model"), {
      ...TINY_MODEL,
      seed: options.modelSeed ?? 2,
    });
    await registerBaseModel(t.db, await describeBaseModel(BASE, model.dir));
    const waiter = new RequestWaiter(t.db, t.url);
    const access = new AccessWatch(t.url);
    await access.start();
    // Settings as the web process reads them at start (a test sets its allow-list before).
    const env = readWebEnv({
      ...process.env,
      DATABASE_URL: t.url,
      OPENTINKER_SESSION_SECRET: SESSION_SECRET,
    });
    const remoteEnvHosts = env.OPENTINKER_REMOTE_ENV_HOSTS;
    const server = createServer(
      createRequestListener({
        db: t.db,
        waiter,
        sessionSecret: SESSION_SECRET,
        remoteEnvHosts,
        // The workers' store (OPENTINKER_DATA_DIR below), for snapshot downloads.
        store: options.store ?? new LocalStore(path.join(dir, "store")),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return new ControlPlane(t, dir, url, server, waiter, access);
  }

  /** Starts a worker process and waits until it takes work. */
  async startWorker(env: Record<string, string> = {}): Promise<WorkerProcess> {
    const child = spawn(process.execPath, ["--import", "tsx", WORKER_MAIN], {
      env: {
        ...process.env,
        DATABASE_URL: this.t.url,
        OPENTINKER_DATA_DIR: this.dir,
        WORKER_HEARTBEAT_MS: String(HEARTBEAT_MS),
        WORKER_STALE_AFTER_MS: String(STALE_AFTER_MS),
        WORKER_CONCURRENCY: "8",
        ...env,
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const output: string[] = [];
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    const id = await new Promise<string>((resolve, reject) => {
      const onData = (data: Buffer) => {
        for (const line of data.toString().split("\n").filter(Boolean)) {
          output.push(line);
          const ready = /^worker: registered as (\S+)/.exec(line);
          if (ready?.[1]) resolve(ready[1]);
        }
      };
      child.stdout?.on("data", onData);
      child.stderr?.on("data", onData);
      void exited.then((code) =>
        reject(new Error(`worker exited (${code}) before it was ready:\n${output.join("\n")}`)),
      );
    });
    const worker = { child, id, output, exited };
    this.workers.push(worker);
    return worker;
  }

  async team(slug: string): Promise<Team> {
    const team = await createTeam(this.t.db, { slug, name: slug });
    const { key } = await createApiKey(this.t.db, team.id, { name: "test" });
    return { id: team.id, slug, key };
  }

  async api<T = unknown>(
    key: string | null,
    method: string,
    route: string,
    body?: unknown,
  ): Promise<ApiResponse<T>> {
    const response = await fetch(`${this.url}/api${route}`, {
      method,
      headers: {
        ...(key ? { authorization: `Bearer ${key}` } : {}),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** An adapter `name` over BASE (rank 2) and the arithmetic environment `name-env`, through the API. */
  async arithmeticSetUp(
    team: Team,
    name: string,
    config?: Record<string, unknown>,
  ): Promise<{ adapterId: string; environmentId: string }> {
    const adapter = await this.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name,
      baseModel: BASE,
      rank: 2,
    });
    const env = await this.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: `${name}-env`,
      kind: "BUILTIN",
      builtin: "arithmetic",
      ...(config ? { config } : {}),
    });
    if (adapter.status !== 200 || env.status !== 200) {
      throw new Error(`set-up of ${name}: ${JSON.stringify([adapter.body, env.body])}`);
    }
    return { adapterId: adapter.body.id, environmentId: env.body.id };
  }

  /** Calls an API procedure that returns a future, and waits for its result. */
  async call<T = unknown>(key: string, route: string, body: unknown): Promise<T> {
    const accepted = await this.api<{ requestId: string }>(key, "POST", route, body);
    if (accepted.status !== 200)
      throw new Error(`${route}: ${accepted.status} ${JSON.stringify(accepted.body)}`);
    const done = await this.api<{ status: string; output: T; error: string | null }>(
      key,
      "POST",
      `/v1/futures/${accepted.body.requestId}/wait`,
      { timeoutMs: 30_000 },
    );
    if (done.body.status !== "SUCCEEDED")
      throw new Error(`${route}: ${done.body.status}: ${done.body.error}`);
    return done.body.output;
  }

  async stop(): Promise<void> {
    for (const worker of this.workers) if (worker.child.exitCode === null) worker.child.kill("SIGKILL");
    await Promise.all(this.workers.map((w) => w.exited));
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    await this.waiter.close();
    await this.access.close();
    await this.t.drop();
    await rm(this.dir, { recursive: true, force: true });
  }
}

/** Polls `probe` until it returns a value, failing after `ms`. */
export async function until<T>(probe: () => Promise<T | undefined>, what: string, ms = 90_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
