export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

export const round = (value: number, digits = 2) => Number(value.toFixed(digits));

/** Progress goes to stderr so stdout stays one JSON object. */
export const progress = (line: string) => process.stderr.write(`bench: ${line}\n`);
