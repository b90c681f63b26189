/** Median wall time (ms) of fn over repeated runs, after warm-up runs. */
export function medianMs(
  fn: () => void,
  options: { minRuns?: number; minMs?: number; warmup?: number } = {},
): number {
  const { minRuns = 7, minMs = 300, warmup = 2 } = options;
  for (let i = 0; i < warmup; i++) fn();
  const times: number[] = [];
  const started = performance.now();
  while (times.length < minRuns || performance.now() - started < minMs) {
    const t0 = performance.now();
    fn();
    times.push(performance.now() - t0);
    if (times.length >= 1000) break;
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)] as number;
}

export const round = (value: number, digits = 3) => Number(value.toFixed(digits));

/** Progress goes to stderr so stdout stays one JSON object. */
export const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);
