import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

/** Spawns a TypeScript entry point under tsx, prefixing its output lines. */
export function spawnService(
  entry: string,
  env: NodeJS.ProcessEnv,
  onLine: (line: string) => void,
): ChildProcess {
  const child = spawn(process.execPath, ["--import", "tsx", entry], {
    env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  for (const stream of [child.stdout, child.stderr]) {
    if (stream) createInterface({ input: stream }).on("line", onLine);
  }
  return child;
}

/** Runs a command to completion with inherited output; resolves with its exit code. */
export function runCommand(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { env, cwd, stdio: ["ignore", "inherit", "inherit"] });
    child.on("error", reject);
    child.on("close", (code) => resolve(code ?? 1));
  });
}

/** How a stop ended: the process was already gone, exited on SIGTERM, or had to be killed. */
export type StopOutcome = "not running" | "exited" | "killed";

/** SIGTERM, then SIGKILL if the process is still there after `graceMs`. */
export function stopProcess(child: ChildProcess, graceMs = 15_000): Promise<StopOutcome> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve("not running");
  return new Promise((resolve) => {
    let outcome: StopOutcome = "exited";
    const timer = setTimeout(() => {
      outcome = "killed";
      child.kill("SIGKILL");
    }, graceMs);
    child.once("exit", () => {
      clearTimeout(timer);
      resolve(outcome);
    });
    child.kill("SIGTERM");
  });
}
