// The whole service as a user runs it: `npm start` (build, migrations, seed, web,
// worker) on a test database of its own, and Debian's chromium driven by
// playwright-core (never a downloaded browser).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { type Browser, chromium, type Page } from "playwright-core";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
/** Screenshots of the main pages, kept as test artifacts. */
export const ARTIFACTS = path.join(ROOT, "test-results", "e2e");

export interface Stack {
  url: string;
  t: TestDatabase;
  demo: { email: string; password: string; apiKey: string };
  output(): string;
  stop(): Promise<void>;
}

/** `env`: settings for the stack beyond the test's own (e.g. OPENTINKER_REMOTE_ENV_HOSTS). */
export async function startStack(env: Record<string, string> = {}): Promise<Stack> {
  const t = await createTestDatabase();
  const dataDir = await mkdtemp(path.join(tmpdir(), "opentinker-e2e-"));
  const child: ChildProcess = spawn("npm", ["start", "--silent"], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: t.url,
      OPENTINKER_DATA_DIR: dataDir,
      PORT: "0",
      WORKER_HEARTBEAT_MS: "500",
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
    detached: true,
  });
  let output = "";
  child.stdout?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  child.stderr?.on("data", (c: Buffer) => {
    output += c.toString();
  });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, "SIGINT");
    await exited;
    await t.drop();
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const url = await until(
      () => /running at (\S+)/.exec(output)?.[1],
      "npm start",
      300_000,
      () => child.exitCode !== null,
    );
    const apiKey = /API key \(shown once, keep it\): (ot_\S+)/.exec(output)?.[1] as string;
    const sign = /dashboard sign-in \(shown once, keep it\): (\S+) \/ (\S+)/.exec(output);
    return {
      url,
      t,
      demo: { email: sign?.[1] as string, password: sign?.[2] as string, apiKey },
      output: () => output,
      stop,
    };
  } catch (error) {
    await stop();
    throw new Error(`${(error as Error).message}\n${output}`);
  }
}

export async function until<T>(
  probe: () => T | undefined | Promise<T | undefined>,
  what: string,
  ms: number,
  failed: () => boolean = () => false,
): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (failed()) throw new Error(`gave up waiting for ${what}: the process exited`);
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? "/usr/bin/chromium",
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

/** A page that records console errors and failed requests, so a test can assert there were none. */
export async function openPage(browser: Browser, viewport = { width: 1280, height: 800 }) {
  const context = await browser.newContext({ viewport });
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("console", (message) => {
    if (message.type() === "error") problems.push(`console: ${message.text()}`);
  });
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  return { page, problems };
}

export async function signIn(page: Page, url: string, email: string, password: string): Promise<void> {
  await page.goto(`${url}/sign-in`);
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("heading", { name: "Overview" }).waitFor();
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });
}
