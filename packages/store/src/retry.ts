// Retries for a store's network operations. The S3 client retries each request
// itself; this covers what it cannot: a response body cut off mid-download, or
// an upload whose parts all failed. Errors that say the request itself is
// wrong (not found, refused, a checksum that does not match) are not retried.
import { ChecksumMismatchError, ObjectNotFoundError } from "./object-store.ts";

export interface RetryPolicy {
  attempts: number;
  /** Wait before the 2nd attempt; doubled for each later one. */
  firstDelayMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { attempts: 4, firstDelayMs: 200 };

function retryable(error: unknown): boolean {
  if (error instanceof ChecksumMismatchError || error instanceof ObjectNotFoundError) return false;
  if (error instanceof RangeError) return false;
  const status = (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
  // 4xx means the request is wrong (or unauthorised), except a timeout or throttling.
  return status === undefined || status >= 500 || status === 408 || status === 429;
}

/**
 * A store error that says the service or the connection failed, not the request
 * (a 5xx, a timeout, throttling, or what the S3 client itself marks retryable),
 * so the same write may succeed later: a job that meets one after the store's
 * own retries is resumed, not failed. Connection errors without a status are the
 * caller's to recognise (protocol's isNetworkFault).
 */
export function isTransientStoreError(error: unknown): boolean {
  // The store wraps what the S3 client threw (naming the object) as its cause.
  for (let e = error, depth = 0; e != null && depth < 4; e = (e as { cause?: unknown }).cause, depth++)
    if (transientOne(e)) return true;
  return false;
}

function transientOne(error: unknown): boolean {
  const e = error as { $metadata?: { httpStatusCode?: number }; $retryable?: unknown; name?: unknown };
  const status = e.$metadata?.httpStatusCode;
  if (status !== undefined) return status >= 500 || status === 408 || status === 429;
  return Boolean(e.$retryable) || e.name === "TimeoutError";
}

export async function withRetries<T>(policy: RetryPolicy, run: () => Promise<T>): Promise<T> {
  let delay = policy.firstDelayMs;
  for (let attempt = 1; ; attempt++) {
    try {
      return await run();
    } catch (error) {
      if (attempt >= policy.attempts || !retryable(error)) throw error;
      await new Promise((resolve) => setTimeout(resolve, delay));
      delay *= 2;
    }
  }
}

/** Runs `each` over `items`, at most `limit` at a time; rejects with the first failure once all settled. */
export async function forEachLimit<T>(
  items: readonly T[],
  limit: number,
  each: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  let failure: { error: unknown } | null = null;
  const lane = async () => {
    while (next < items.length && !failure) {
      const item = items[next++] as T;
      await each(item).catch((error: unknown) => {
        failure ??= { error };
      });
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure) throw (failure as { error: unknown }).error;
}
