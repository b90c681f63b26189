import type { DbTx } from "./client.ts";
import { PgListener } from "./pg-listener.ts";
import { REQUEST_CHANNEL } from "./queue-names.ts";
import { getRequest, parseRequestNotice, type RequestOutcome } from "./requests.ts";

const FINISHED = new Set(["SUCCEEDED", "FAILED", "CANCELLED"]);

/** Called with the outcome a notice carried, or null when it must be read back. */
type Wake = (outcome: RequestOutcome | null) => void;

/** A request being listened for; see `RequestWaiter.expect`. */
export interface Expectation {
  /** The request once finished (or as it stands after `timeoutMs`); null when the team has no such request. */
  result(teamId: string, timeoutMs: number): Promise<RequestOutcome | null>;
  /** Stops listening (the caller will not ask for the result). */
  cancel(): void;
}

const outcomeOf = (row: RequestOutcome): RequestOutcome => ({
  id: row.id,
  teamId: row.teamId,
  kind: row.kind,
  status: row.status,
  output: row.output,
  error: row.error,
});

/**
 * Waits for requests to finish. Workers NOTIFY on completion, usually with the
 * outcome in the notice, so a waiter wakes as soon as the result is written,
 * without polling and mostly without reading it back.
 */
export class RequestWaiter {
  private readonly listener: PgListener;
  private readonly waiting = new Map<string, Set<Wake>>();
  private ready: Promise<unknown> | null = null;

  constructor(
    private readonly db: DbTx,
    url: string,
  ) {
    // After a reconnect we may have missed notifications: wake everyone to re-read.
    this.listener = new PgListener(url, () => {
      for (const id of [...this.waiting.keys()]) this.wake(id, null);
    });
  }

  private wake(id: string, outcome: RequestOutcome | null): void {
    const set = this.waiting.get(id);
    if (!set) return;
    this.waiting.delete(id);
    for (const wake of set) wake(outcome);
  }

  /**
   * Starts listening for a request. For a request about to be enqueued, call it
   * before the enqueue commits: no notice can then be missed, and the result
   * needs no first read.
   */
  async expect(requestId: string): Promise<Expectation> {
    this.ready ??= this.listener.subscribe(REQUEST_CHANNEL, (payload) => {
      const notice = parseRequestNotice(payload);
      this.wake(notice.id, notice.outcome);
    });
    await this.ready;
    let wake: Wake = () => {};
    const notified = new Promise<RequestOutcome | null>((resolve) => {
      wake = resolve;
    });
    const set = this.waiting.get(requestId) ?? new Set();
    this.waiting.set(requestId, set);
    set.add(wake);
    const forget = () => {
      set.delete(wake);
      if (set.size === 0 && this.waiting.get(requestId) === set) this.waiting.delete(requestId);
    };
    return {
      result: async (teamId, timeoutMs) => {
        let timer: NodeJS.Timeout | undefined;
        const timedOut = new Promise<null>((resolve) => {
          timer = setTimeout(() => resolve(null), timeoutMs);
        });
        const outcome = await Promise.race([notified, timedOut]);
        clearTimeout(timer);
        forget();
        if (outcome && outcome.teamId === teamId) return outcome;
        const row = await getRequest(this.db, teamId, requestId);
        return row && outcomeOf(row);
      },
      cancel: forget,
    };
  }

  /**
   * The request once finished, or as it stands after `timeoutMs`; null when the
   * team has no such request.
   */
  async wait(teamId: string, requestId: string, timeoutMs: number): Promise<RequestOutcome | null> {
    // Listening before reading, so a result written in between is not missed.
    const expectation = await this.expect(requestId);
    const first = await getRequest(this.db, teamId, requestId);
    if (!first || FINISHED.has(first.status)) {
      expectation.cancel();
      return first && outcomeOf(first);
    }
    return expectation.result(teamId, timeoutMs);
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}
