// Service processes for the scale-out tests and bench: each a real
// `node --import tsx <entry>` child, its output kept, ready when it prints its
// ready line.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";

export const REPO_ROOT = fileURLToPath(new URL("../..", import.meta.url));
export const WEB_PROCESS = fileURLToPath(new URL("../../apps/web/src/server/api-main.ts", import.meta.url));
export const WORKER_MAIN = fileURLToPath(new URL("../../apps/worker/src/main.ts", import.meta.url));
export const WORKER_HOST = fileURLToPath(new URL("../../scripts/worker-host.ts", import.meta.url));

export interface Service {
  name: string;
  child: ChildProcess;
  /** What the ready line captured (the URL, the worker id). */
  ready: string;
  output: string[];
  exited: Promise<number | null>;
  /** Started in a process group of its own: `kill` ends the group. */
  group: boolean;
  /** Resolves with the first line matching `pattern` (seen before or after this call). */
  line(pattern: RegExp, ms?: number): Promise<RegExpExecArray>;
}

/**
 * Starts `command` (argv, run from the repository root) and waits for a line
 * matching `ready` (its first group is the service's `ready`). `detached`: its
 * own process group, so the test can kill it with all it started.
 */
export function startService(
  name: string,
  command: string[],
  env: NodeJS.ProcessEnv,
  ready: RegExp,
  options: { detached?: boolean; ms?: number } = {},
): Promise<Service> {
  const [file, ...args] = command as [string, ...string[]];
  const child = spawn(file, args, {
    cwd: REPO_ROOT,
    env,
    stdio: ["ignore", "pipe", "pipe"],
    detached: options.detached ?? false,
  });
  const output: string[] = [];
  const watchers: { pattern: RegExp; resolve: (m: RegExpExecArray) => void }[] = [];
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  for (const stream of [child.stdout, child.stderr])
    if (stream)
      createInterface({ input: stream }).on("line", (line) => {
        output.push(line);
        for (const watcher of [...watchers]) {
          const match = watcher.pattern.exec(line);
          if (!match) continue;
          watchers.splice(watchers.indexOf(watcher), 1);
          watcher.resolve(match);
        }
      });
  const line = (pattern: RegExp, ms = 60_000) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      for (const seen of output) {
        const match = pattern.exec(seen);
        if (match) return resolve(match);
      }
      const timer = setTimeout(
        () =>
          reject(new Error(`${name}: no line matching ${pattern} within ${ms} ms:\n${output.join("\n")}`)),
        ms,
      );
      watchers.push({
        pattern,
        resolve: (match) => {
          clearTimeout(timer);
          resolve(match);
        },
      });
    });
  return new Promise((resolve, reject) => {
    void exited.then((code) =>
      reject(new Error(`${name} exited (${code}) before it was ready:\n${output.join("\n")}`)),
    );
    line(ready, options.ms ?? 90_000).then(
      (match) =>
        resolve({
          name,
          child,
          ready: match[1] ?? match[0],
          output,
          exited,
          line,
          group: options.detached ?? false,
        }),
      reject,
    );
  });
}

/** node --import tsx <entry>. */
export const tsx = (entry: string): string[] => [process.execPath, "--import", "tsx", entry];

/** Stops a service (its whole group when it was started detached) and waits for it. */
export async function kill(service: Service, signal: NodeJS.Signals = "SIGKILL"): Promise<void> {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return;
  const pid = service.child.pid;
  try {
    if (service.group && pid) process.kill(-pid, signal);
    else service.child.kill(signal);
  } catch {
    // Already gone.
  }
  await service.exited;
}
