// A job's metrics as the charts read them: one row per step, every metric of
// that step by name. History (from `subscribe`) and live `metrics` events are
// merged by step, so a point that arrives twice (a reconnect, or a step stored
// while subscribing) is drawn once.
import type { MetricPoint } from "../../server/realtime/events.ts";

export type StepTable = ReadonlyMap<number, Readonly<Record<string, number>>>;

export interface MetricRow {
  step: number;
  values: Readonly<Record<string, number>>;
}

export const EMPTY_TABLE: StepTable = new Map();

/** The table with one step's values merged in (later values win). */
export function mergeStep(table: StepTable, step: number, values: Record<string, number>): StepTable {
  const next = new Map(table);
  next.set(step, { ...table.get(step), ...values });
  return next;
}

/** The table with several steps' values merged in, in order (one copy for the lot). */
export function mergeSteps(
  table: StepTable,
  steps: readonly { step: number; values: Record<string, number> }[],
): StepTable {
  if (steps.length === 0) return table;
  const next = new Map(table);
  for (const { step, values } of steps) next.set(step, { ...next.get(step), ...values });
  return next;
}

/** The table with a history of points merged in. */
export function mergePoints(table: StepTable, points: readonly MetricPoint[]): StepTable {
  if (points.length === 0) return table;
  const next = new Map(table);
  for (const { step, name, value } of points) next.set(step, { ...next.get(step), [name]: value });
  return next;
}

/** Rows in step order. */
export function tableRows(table: StepTable): MetricRow[] {
  return [...table.entries()].sort(([a], [b]) => a - b).map(([step, values]) => ({ step, values }));
}

/** The newest step's value of `name`, if any step has one. */
export function latestValue(rows: readonly MetricRow[], name: string): number | undefined {
  for (let i = rows.length - 1; i >= 0; i--) {
    const value = rows[i]?.values[name];
    if (value !== undefined) return value;
  }
  return undefined;
}

/** Every metric name recorded, sorted. */
export function metricNames(rows: readonly MetricRow[]): string[] {
  return [...new Set(rows.flatMap((row) => Object.keys(row.values)))].sort();
}

/**
 * Bookkeeping the step's own number already says: `step` is the row's step
 * (the RL loop records it), `step/value` the optimizer's count of the
 * adapter's updates (AdamW counts from 1; the snapshot's trainer step), which
 * on a fresh adapter reads as the step off by one.
 */
const BOOKKEEPING = new Set(["step", "step/value"]);

/** Whether a metric is worth listing or charting (not the step's own number again). */
export const isListedMetric = (name: string): boolean => !BOOKKEEPING.has(name);

/** The metrics of one step worth listing, by name, sorted. */
export function listedMetrics(values: Readonly<Record<string, number>>): [string, number][] {
  return Object.entries(values)
    .filter(([name]) => isListedMetric(name))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

/** Compact, readable figures: 12,345 · 0.1235 · 1.2e-5. */
export function formatNumber(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  if (Number.isInteger(value)) return value.toLocaleString("en-US");
  const abs = Math.abs(value);
  // Float noise (a std of 1e-17 over equal rewards) reads as the zero it is.
  if (abs < 1e-12) return "0";
  if (abs >= 1000) return value.toLocaleString("en-US", { maximumFractionDigits: 0 });
  if (abs < 1e-3) return value.toExponential(2);
  return String(Number(value.toPrecision(4)));
}
