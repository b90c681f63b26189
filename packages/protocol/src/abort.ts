// Waiting on an AbortSignal from many operations at once. A job's signal is
// shared by every episode of its rollout and every sample call in flight;
// a listener each put dozens on one signal, past Node's limit of 10 per
// EventTarget (a MaxListenersExceededWarning per job). Here each signal gets
// one listener, which calls every operation waiting at the moment it aborts.

const waiting = new WeakMap<AbortSignal, Set<() => void>>();

/**
 * Calls `listener` once when `signal` aborts, unless the returned function is
 * called first (an operation calls it when it settles). Adds at most one
 * listener to the signal, however many operations wait on it. Like
 * addEventListener, nothing is called for a signal that has already aborted:
 * check `signal.aborted` first.
 */
export function whenAborted(signal: AbortSignal, listener: () => void): () => void {
  let listeners = waiting.get(signal);
  if (!listeners) {
    const all = new Set<() => void>();
    listeners = all;
    waiting.set(signal, all);
    signal.addEventListener(
      "abort",
      () => {
        waiting.delete(signal);
        for (const call of [...all]) call();
      },
      { once: true },
    );
  }
  const own = listeners;
  // A wrapper per call, so the same function can wait twice and be released once each.
  const entry = () => listener();
  own.add(entry);
  return () => {
    own.delete(entry);
  };
}
