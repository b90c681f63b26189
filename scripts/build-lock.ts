// One dashboard build at a time on a machine: two `npm start`s (or two test
// files) building .next together corrupt it. A directory is created atomically,
// so it serves as the lock; one left by a process that died is taken over.
import { mkdir, readFile, rm, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { REPO_ROOT } from "./env.ts";

const LOCK = path.join(REPO_ROOT, "apps", "web", ".build-lock");
const STALE_MS = 10 * 60_000;

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function abandoned(): Promise<boolean> {
  const pid = Number(await readFile(path.join(LOCK, "pid"), "utf8").catch(() => ""));
  if (pid > 0) return !alive(pid);
  // No pid yet: being created right now, unless it has been like that for long.
  const age = Date.now() - (await stat(LOCK).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
  return age > STALE_MS;
}

async function acquire(): Promise<void> {
  for (;;) {
    try {
      await mkdir(LOCK);
      await writeFile(path.join(LOCK, "pid"), String(process.pid));
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      if (await abandoned()) await rm(LOCK, { recursive: true, force: true });
      else await new Promise((r) => setTimeout(r, 250));
    }
  }
}

export async function withBuildLock<T>(run: () => Promise<T>): Promise<T> {
  await acquire();
  try {
    return await run();
  } finally {
    await rm(LOCK, { recursive: true, force: true });
  }
}
