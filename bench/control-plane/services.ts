// Child processes the bench starts (the web process's API listener, workers):
// started under tsx, ready when they print their ready line, stopped by the
// teardown with SIGTERM (SIGKILL if they have not drained after a few seconds).
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { progress } from "./stats.ts";
import type { Teardown } from "./teardown.ts";

const READY_TIMEOUT_MS = 60_000;
const STOP_GRACE_MS = 5_000;

function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill("SIGKILL"), STOP_GRACE_MS);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill("SIGTERM");
  });
}

export interface ServiceOptions {
  entry: string;
  args?: string[];
  /** Node options before the entry point (after tsx's). */
  nodeArgs?: string[];
  env: NodeJS.ProcessEnv;
  /** Its ready line; the first capture group is what `startService` resolves with. */
  ready: RegExp;
  /** In a process group of its own, so that `killGroup` ends it with everything it started. */
  detached?: boolean;
}

export interface Service {
  pid: number;
  ready: string;
  /** Resolves when the process has exited. */
  exited: Promise<void>;
}

/** SIGKILL to a detached service's whole group (a host dying), resolved once the process is gone. */
export async function killGroup(service: Service): Promise<void> {
  try {
    process.kill(-service.pid, "SIGKILL");
  } catch {
    // Already gone.
  }
  await service.exited;
}

/** Spawns `node --import tsx entry ...args` and resolves once a line of its output matches `ready`. */
export function startService(name: string, options: ServiceOptions, teardown: Teardown): Promise<Service> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", ...(options.nodeArgs ?? []), options.entry, ...(options.args ?? [])],
    { env: options.env, stdio: ["ignore", "pipe", "pipe"], detached: options.detached ?? false },
  );
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  teardown.defer(`stop the ${name}`, () => stop(child));
  const output: string[] = [];
  let started = false;
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () =>
        reject(new Error(`the ${name} was not ready after ${READY_TIMEOUT_MS} ms:\n${output.join("\n")}`)),
      READY_TIMEOUT_MS,
    );
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on("line", (line) => {
        // Once it runs, what it says (warnings, errors) goes to our stderr.
        if (started) return progress(`${name}: ${line}`);
        output.push(line);
        if (output.length > 50) output.shift();
        const match = options.ready.exec(line);
        if (match) {
          started = true;
          clearTimeout(timer);
          resolve({ pid: child.pid as number, ready: match[1] ?? line, exited });
        }
      });
    }
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`the ${name} exited (${signal ?? code}) before it was ready:\n${output.join("\n")}`));
    });
  });
}
