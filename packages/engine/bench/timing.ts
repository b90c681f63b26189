export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

export const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** Progress goes to stderr so stdout stays one JSON object. */
export const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);

/**
 * `rounds` rounds of every side in turn (A, B, C, A, B, C, …), so a change in the
 * shared machine's load hits every side alike: sample r of each side comes from round r.
 */
export async function interleaved<K extends string>(
  rounds: number,
  sides: Record<K, () => Promise<number>>,
): Promise<Record<K, number[]>> {
  const names = Object.keys(sides) as K[];
  const samples = Object.fromEntries(names.map((n) => [n, [] as number[]])) as Record<K, number[]>;
  for (let r = 0; r < rounds; r++) {
    progress(`round ${r + 1}/${rounds}`);
    for (const name of names) samples[name].push(await sides[name]());
  }
  return samples;
}

/** a / b from paired samples: the median over rounds of a[r] / b[r] (never a ratio of two medians). */
export const pairedRatio = (a: readonly number[], b: readonly number[]) =>
  median(a.map((value, r) => value / (b[r] as number)));
