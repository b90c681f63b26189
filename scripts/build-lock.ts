// One dashboard build at a time on a machine: two `npm start`s (or two test
// files) building .next together corrupt it. A directory is created atomically,
// so it serves as the lock; one left behind by a killed build goes stale.
import { mkdir, rm, stat } from "node:fs/promises";
import path from "node:path";
import { REPO_ROOT } from "./env.ts";

const LOCK = path.join(REPO_ROOT, "apps", "web", ".build-lock");
const STALE_MS = 10 * 60_000;

async function acquire(): Promise<void> {
  for (;;) {
    try {
      await mkdir(LOCK);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const age = Date.now() - (await stat(LOCK).catch(() => ({ mtimeMs: Date.now() }))).mtimeMs;
      if (age > STALE_MS) await rm(LOCK, { recursive: true, force: true });
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
