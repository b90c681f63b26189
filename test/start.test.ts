// `npm start` end to end: embedded Postgres, migrations, seed, build, web and
// worker, exactly as a new user runs it (DATABASE_URL unset).
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { findFreePort } from "@opentinker/db";
import { afterAll, describe, expect, it } from "vitest";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

interface Started {
  child: ChildProcess;
  output: () => string;
  /** Exit code, or the signal npm re-raises on itself after an interrupted script. */
  exit: Promise<number | string | null>;
}

function npmStart(env: NodeJS.ProcessEnv): Started {
  // Its own process group, so that `interrupt` can signal it as a terminal's Ctrl-C does.
  const child = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  const exit = new Promise<number | string | null>((resolve) =>
    child.once("exit", (code, signal) => resolve(code ?? signal)),
  );
  return { child, output: () => output, exit };
}

/** SIGINT to the whole process group: what Ctrl-C in a terminal does. */
function interrupt(started: Started): void {
  if (started.child.pid !== undefined && started.child.exitCode === null)
    process.kill(-started.child.pid, "SIGINT");
}

async function until<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  ms: number,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The pid of the worker process `npm start` runs (in its process group). */
function workerPid(started: Started): number | undefined {
  const ps = spawnSync("ps", ["-e", "-o", "pid=,pgid=,args="], { encoding: "utf8" });
  for (const line of ps.stdout.split("\n")) {
    const [pid, pgid, ...args] = line.trim().split(/\s+/);
    if (Number(pgid) === started.child.pid && args.join(" ").includes("apps/worker/src/main.ts"))
      return Number(pid);
  }
  return undefined;
}

/** SIGINT to the start process alone, as `kill -INT <pid>` or a service manager sends it. */
function interruptAlone(started: Started): void {
  if (started.child.pid !== undefined && started.child.exitCode === null)
    process.kill(started.child.pid, "SIGINT");
}

/** The exit, or (after interrupting the whole group, so nothing is left behind) an error past `ms`. */
async function exitWithin(started: Started, ms: number): Promise<number | string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<"late">((resolve) => {
    timer = setTimeout(() => resolve("late"), ms);
  });
  const exit = await Promise.race([started.exit, late]);
  clearTimeout(timer);
  if (exit !== "late") return exit;
  interrupt(started);
  await started.exit;
  throw new Error(`npm start did not stop within ${ms / 1000} s`);
}

function runRemoteExample(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; output: string }> {
  // Output piped, as into a log: the progress bar must not draw there.
  const child = spawn(process.execPath, ["--import", "tsx", "examples/rl-remote.ts", ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    output += chunk.toString();
  });
  return new Promise((resolve) => child.once("exit", (code) => resolve({ code, output })));
}

function baseEnv(dataDir: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    OPENTINKER_DATA_DIR: dataDir,
    PORT: "0",
    WORKER_HEARTBEAT_MS: "300",
  };
  delete env.DATABASE_URL;
  return env;
}

describe("npm start", () => {
  const dirs: string[] = [];
  afterAll(async () => {
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  it("serves /api/health on an embedded Postgres, heartbeats, stops cleanly and keeps its data", async () => {
    const dataDir = await mkdtemp(path.join(tmpdir(), "ot-start-"));
    dirs.push(dataDir);

    const first = npmStart(baseEnv(dataDir));
    try {
      const url = await until(() => /running at (\S+)/.exec(first.output())?.[1], "the URL", 240_000);
      expect(first.output()).toContain("embedded Postgres");
      expect(first.output()).toMatch(/API key \(shown once, keep it\): ot_\S+/);

      type Health = { database: { status: string }; workers: { lastHeartbeatAt: string | null } };
      const health = async () => (await (await fetch(`${url}/api/health`)).json()) as Health;
      const response = await fetch(`${url}/api/health`);
      expect(response.status).toBe(200);
      expect(((await response.json()) as Health).database.status).toBe("ok");
      const firstBeat = await until(
        async () => (await health()).workers.lastHeartbeatAt ?? undefined,
        "a worker",
        30_000,
      );
      await until(
        async () => (((await health()).workers.lastHeartbeatAt ?? "") > firstBeat ? true : undefined),
        "the heartbeat to advance",
        30_000,
      );
      const page = await fetch(url);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain("OpenTinker");
      // The remote example trains against this server with the printed key.
      const key = /API key \(shown once, keep it\): (ot_\S+)/.exec(first.output())?.[1] as string;
      const example = await runRemoteExample(["--url", url, "--steps", "2"], { OPENTINKER_API_KEY: key });
      expect(example.output, example.output).toMatch(/reward \d\.\d+ → \d\.\d+ over 2 steps/);
      expect(example.code).toBe(0);
      // Piped: a plain line per step, no carriage-return redraws of a bar.
      expect(example.output).not.toContain("\r");
      expect(example.output).toMatch(/^step 0 /m);
      expect(example.output).toMatch(/^step 1 /m);
    } finally {
      interrupt(first);
    }
    expect([0, "SIGINT"]).toContain(await first.exit);
    // Ctrl-C reaches the worker directly and through the start script's SIGTERM; either may land first.
    expect(first.output()).toMatch(/worker: SIG(INT|TERM), draining/);
    expect(first.output()).not.toMatch(/failed|exited \(/);
    expect(existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);

    // Second start: same data, so the demo key is not minted again.
    const second = npmStart(baseEnv(dataDir));
    try {
      const url = await until(() => /running at (\S+)/.exec(second.output())?.[1], "the URL again", 240_000);
      expect(second.output()).toContain("schema up to date");
      expect(second.output()).not.toContain("API key");
      expect((await fetch(`${url}/api/health`)).status).toBe(200);

      // A worker that dies is restarted while the web process keeps serving.
      type Online = { workers: { online: number } };
      await until(
        () => (/worker: registered as/.test(second.output()) ? true : undefined),
        "the worker",
        60_000,
      );
      const pid = await until(() => workerPid(second), "the worker's pid", 10_000);
      process.kill(pid, "SIGKILL");
      await until(
        () =>
          /opentinker: worker process exited \(SIGKILL\); restarting it in 1 s \(restart 1\)/.test(
            second.output(),
          )
            ? true
            : undefined,
        "the restart notice",
        30_000,
      );
      // Released at once: the dead worker is offline before any heartbeat could go stale.
      expect(((await (await fetch(`${url}/api/health`)).json()) as Online).workers.online).toBe(0);
      await until(
        () => ((second.output().match(/worker: registered as/g) ?? []).length === 2 ? true : undefined),
        "the restarted worker",
        60_000,
      );
      const health = await fetch(`${url}/api/health`);
      expect(health.status).toBe(200);
      expect(((await health.json()) as Online).workers.online).toBe(1);
      expect(workerPid(second)).not.toBe(pid);
    } finally {
      // Not Ctrl-C's group signal: this process alone has to stop its children.
      interruptAlone(second);
    }
    expect([0, "SIGINT"]).toContain(await exitWithin(second, 30_000));
    const stages = second.output().slice(second.output().indexOf("opentinker: stopping"));
    expect(stages).toMatch(
      /^opentinker: stopping \(SIGINT\): the web process and the worker drain, then the database stops$/m,
    );
    expect(stages).toMatch(/^opentinker: web process stopped \(\d+\.\d s\)$/m);
    expect(stages).toMatch(/^worker: SIGTERM, draining$/m);
    expect(stages).toMatch(/^opentinker: worker process stopped \(\d+\.\d s\)$/m);
    expect(stages).toMatch(/^opentinker: database: embedded Postgres stopped \(\d+\.\d s\)$/m);
    expect(stages).toMatch(/^opentinker: stopped$/m);
    expect(workerPid(second)).toBeUndefined();
    expect(existsSync(path.join(dataDir, "pg", "postmaster.pid"))).toBe(false);
  }, 600_000);

  it("the remote example against an unreachable server says so in one line naming the URL", async () => {
    const url = `http://127.0.0.1:${await findFreePort()}`;
    // The URL from OPENTINKER_URL, as a user sets it for a server elsewhere.
    const run = await runRemoteExample([], { OPENTINKER_URL: url, OPENTINKER_API_KEY: "ot_unused" });
    expect(run.code).toBe(1);
    const lines = run.output.trim().split("\n");
    expect(lines, run.output).toHaveLength(1);
    expect(lines[0]).toContain(`rl-remote: cannot reach the OpenTinker server at ${url} (ECONNREFUSED)`);
    expect(run.output).not.toContain("TypeError");
  }, 60_000);

  it("an unreachable DATABASE_URL stops start-up with one line naming the host", async () => {
    const port = await findFreePort();
    const env = { ...process.env, DATABASE_URL: `postgresql://u:secret@127.0.0.1:${port}/x`, PORT: "0" };
    const run = npmStart(env);
    expect(await run.exit).toBe(1);
    const lines = run.output().trim().split("\n");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`cannot reach database at 127.0.0.1:${port}/x`);
    expect(run.output()).not.toContain("secret");
  }, 60_000);
});
