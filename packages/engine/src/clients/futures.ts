import type { ApiFuture } from "@opentinker/protocol";

/**
 * Runs submitted work strictly in submission order, one item at a time (the
 * ordering Tinker's clients expect of one policy's requests). A failed item fails
 * only its own future; the queue goes on.
 */
export class OrderedQueue {
  private tail: Promise<unknown> = Promise.resolve();

  submit<T>(work: () => T | Promise<T>): ApiFuture<T> {
    const run = this.tail.then(work, work);
    // The next item waits for this one, whatever its outcome.
    this.tail = run.catch(() => undefined);
    // Nobody may ever ask for the result: don't report it as unhandled.
    run.catch(() => undefined);
    return { result: () => run };
  }
}
