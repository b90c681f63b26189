// `npm start`'s supervision of its services: a service that dies after it came
// up is restarted with backoff (saying so in one line), while the others keep
// serving; one that dies before it came up fails the start, as before.
import type { ChildProcess } from "node:child_process";
import { type StopOutcome, stopProcess } from "./processes.ts";

/** Waits before the 1st, 2nd, … restart; the last one repeats. */
const BACKOFF_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];
/** A service that stayed up this long starts again from the shortest wait. */
const STABLE_MS = 60_000;

export interface SupervisedHooks {
  say: (line: string) => void;
  /** After every unexpected exit, before the restart (e.g. release what the process held). */
  afterExit?: (child: ChildProcess) => Promise<void>;
  /** The first start failed before the service came up. */
  failedToStart: (reason: string) => void;
}

export class Supervised {
  private child: ChildProcess | null = null;
  private stopping = false;
  private restarts = 0;
  private ready = false;
  private timer: NodeJS.Timeout | null = null;

  constructor(
    readonly name: string,
    private readonly spawn: () => ChildProcess,
    private readonly hooks: SupervisedHooks,
  ) {}

  start(): void {
    const child = this.spawn();
    const startedAt = Date.now();
    this.child = child;
    child.once("exit", (code, signal) => void this.exited(child, startedAt, signal ?? `code ${code}`));
  }

  /** The service is up (its ready line was seen): later exits restart it. */
  markReady(): void {
    this.ready = true;
  }

  current(): ChildProcess | null {
    return this.child;
  }

  private async exited(child: ChildProcess, startedAt: number, how: string): Promise<void> {
    if (this.stopping || this.child !== child) return;
    const reason = `${this.name} process exited (${how})`;
    if (!this.ready) return this.hooks.failedToStart(reason);
    await this.hooks
      .afterExit?.(child)
      .catch((error: unknown) =>
        this.hooks.say(`cleaning up after the ${this.name} process failed: ${(error as Error).message}`),
      );
    if (Date.now() - startedAt > STABLE_MS) this.restarts = 0;
    const wait = BACKOFF_MS[Math.min(this.restarts, BACKOFF_MS.length - 1)] as number;
    this.restarts++;
    this.hooks.say(`${reason}; restarting it in ${wait / 1000} s (restart ${this.restarts})`);
    this.timer = setTimeout(() => {
      this.timer = null;
      if (!this.stopping) this.start();
    }, wait);
  }

  /** Stops the service for good (SIGTERM, then SIGKILL after the grace), with no restart. */
  async stop(graceMs?: number): Promise<StopOutcome> {
    this.stopping = true;
    if (this.timer) clearTimeout(this.timer);
    return this.child ? stopProcess(this.child, graceMs) : "not running";
  }
}
