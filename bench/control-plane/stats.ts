// Latency summaries and load loops shared by the bench's sections.

export interface Latency {
  /** Milliseconds. */
  p50: number;
  p95: number;
  n: number;
}

export const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** Nearest-rank percentile of `values` (q in [0, 1]). */
export function percentile(values: readonly number[], q: number): number {
  if (values.length === 0) throw new RangeError("percentile of no values");
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1] as number;
}

export function latency(values: readonly number[]): Latency {
  return { p50: round(percentile(values, 0.5)), p95: round(percentile(values, 0.95)), n: values.length };
}

/** Progress goes to stderr so that stdout stays one JSON object. */
export const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);

/** Epoch milliseconds with sub-millisecond precision (comparable to Postgres timestamps). */
export const epochMs = () => performance.timeOrigin + performance.now();

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * `clients` loops, each calling `call(client)` `perClient` times back to back;
 * resolves with what every call returned, in completion order.
 */
export async function loops<T>(
  clients: number,
  perClient: number,
  call: (client: number) => Promise<T>,
): Promise<T[]> {
  const results: T[] = [];
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let i = 0; i < perClient; i++) results.push(await call(client));
    }),
  );
  return results;
}

/** Wall-clock milliseconds of one call. */
export async function timed(run: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await run();
  return performance.now() - t0;
}
