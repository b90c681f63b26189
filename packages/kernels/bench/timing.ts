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

/** Wall times (ms) of several sides measured round by round: sample r of each side comes from round r. */
export type Interleaved<K extends string> = Record<K, number[]>;

const medianOf = (values: readonly number[]) =>
  [...values].sort((a, b) => a - b)[values.length >> 1] as number;

/**
 * Runs the sides interleaved (A, B, C, B, C, A, C, A, B, …) after warm-up runs of each, so
 * a change in the machine's load (it is shared) hits every side alike; at least
 * `minRounds` rounds and `minMs` in all.
 */
export function interleavedMs<K extends string>(
  sides: Record<K, () => void>,
  options: { minRounds?: number; minMs?: number; warmup?: number } = {},
): Interleaved<K> {
  const { minRounds = 7, minMs = 600, warmup = 2 } = options;
  const names = Object.keys(sides) as K[];
  for (const name of names) for (let i = 0; i < warmup; i++) sides[name]();
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Interleaved<K>;
  const started = performance.now();
  for (let r = 0; r < 1000 && (r < minRounds || performance.now() - started < minMs); r++) {
    // Each round starts one side later: no side always follows the same one (a side
    // that runs after a long single-threaded call finds the pool's threads asleep).
    for (const name of [...names.slice(r % names.length), ...names.slice(0, r % names.length)]) {
      const t0 = performance.now();
      sides[name]();
      samples[name].push(performance.now() - t0);
    }
  }
  return samples;
}

/** Median of one side's samples (ms). */
export const sideMedian = <K extends string>(s: Interleaved<K>, side: K) => medianOf(s[side]);

/** a / b from paired samples: the median over rounds of a[r] / b[r] (never a ratio of two medians). */
export const pairedRatio = <K extends string>(s: Interleaved<K>, a: K, b: K) =>
  medianOf(s[a].map((value, r) => value / (s[b][r] as number)));
