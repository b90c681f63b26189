// What every reference takes and how it reads: any array-like of numbers, read
// as numbers (the references compute in float64 whatever they are given).
export type Vec = ArrayLike<number>;

export const at = (v: Vec, i: number) => v[i] as number;
