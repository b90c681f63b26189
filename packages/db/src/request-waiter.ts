import type { DbTx } from "./client.ts";
import { PgListener } from "./pg-listener.ts";
import { REQUEST_CHANNEL } from "./queue-names.ts";
import { getRequest } from "./requests.ts";

type RequestRow = NonNullable<Awaited<ReturnType<typeof getRequest>>>;

const FINISHED = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/**
 * Waits for requests to finish. Workers NOTIFY on completion, so a waiter wakes
 * as soon as the result is written, without polling.
 */
export class RequestWaiter {
  private readonly listener: PgListener;
  private readonly waiting = new Map<string, Set<() => void>>();
  private ready: Promise<unknown> | null = null;

  constructor(
    private readonly db: DbTx,
    url: string,
  ) {
    // After a reconnect we may have missed notifications: wake everyone to re-read.
    this.listener = new PgListener(url, () => {
      for (const id of [...this.waiting.keys()]) this.wake(id);
    });
  }

  private wake(id: string): void {
    const set = this.waiting.get(id);
    if (!set) return;
    this.waiting.delete(id);
    for (const resolve of set) resolve();
  }

  /**
   * The request once finished, or as it stands after `timeoutMs`; null when the
   * team has no such request.
   */
  async wait(teamId: string, requestId: string, timeoutMs: number): Promise<RequestRow | null> {
    this.ready ??= this.listener.subscribe(REQUEST_CHANNEL, (id) => this.wake(id));
    await this.ready;
    let timer: NodeJS.Timeout | undefined;
    let wakeMe: () => void = () => {};
    const notified = new Promise<void>((resolve) => {
      wakeMe = resolve;
      const set = this.waiting.get(requestId) ?? new Set();
      this.waiting.set(requestId, set);
      set.add(resolve);
      timer = setTimeout(resolve, timeoutMs);
    });
    // Subscribed before reading, so a result written in between is not missed.
    const first = await getRequest(this.db, teamId, requestId);
    if (!first || FINISHED.has(first.status)) {
      this.forget(requestId, wakeMe);
      clearTimeout(timer);
      return first;
    }
    await notified;
    clearTimeout(timer);
    this.forget(requestId, wakeMe);
    return getRequest(this.db, teamId, requestId);
  }

  private forget(requestId: string, resolver: () => void): void {
    const set = this.waiting.get(requestId);
    set?.delete(resolver);
    if (set?.size === 0) this.waiting.delete(requestId);
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}
