// The pure side of the step charts (step-chart.tsx only draws what these
// return): rows of a step table become a chart's points, each series smoothed
// with an EMA over the whole run (as TensorBoard does), then cut to the zoomed
// step range and thinned to what one chart can draw; and the axes' ranges.
import type { MetricRow } from "./metric-table.ts";

/** One drawn step: each series' recorded value and its smoothed value (absent where the step has none). */
export interface ChartPoint {
  step: number;
  raw: Readonly<Record<string, number>>;
  smooth: Readonly<Record<string, number>>;
}

/** A zoomed window of steps, both ends included. */
export interface StepRange {
  from: number;
  to: number;
}

/** The smoothing control's range: 0 draws the values as recorded. */
export const MAX_SMOOTHING = 0.99;
/** Up to this many points a line marks each one; past it a marker per point is a blob. */
export const MARKER_LIMIT = 40;
/** At most about this many points are drawn per chart; longer series are thinned. */
export const MAX_POINTS = 600;

export const showMarkers = (points: number): boolean => points <= MARKER_LIMIT;

/** The smoothing weight, checked: the control and the URL only ever hand over [0, MAX_SMOOTHING]. */
export function checkSmoothing(weight: number): number {
  if (!(weight >= 0 && weight <= MAX_SMOOTHING))
    throw new RangeError(`smoothing must be between 0 and ${MAX_SMOOTHING}, got ${weight}`);
  return weight;
}

/**
 * An exponential moving average with TensorBoard's debiasing (divided by
 * 1 − weightⁿ, so the first points are not pulled towards zero). Gaps
 * (undefined or non-finite values) stay gaps and do not enter the average.
 */
export function ema(values: readonly (number | undefined)[], weight: number): (number | undefined)[] {
  checkSmoothing(weight);
  let last = 0;
  let count = 0;
  return values.map((v) => {
    if (v === undefined || !Number.isFinite(v)) return undefined;
    last = last * weight + (1 - weight) * v;
    count++;
    return last / (1 - weight ** count);
  });
}

/**
 * The points of the steps that recorded any of `keys`, in step order, with
 * each key smoothed over the steps that recorded it. Smoothing runs over the
 * whole run, before any zoom, so zooming in never changes a smoothed value.
 */
export function chartPoints(
  rows: readonly MetricRow[],
  keys: readonly string[],
  smoothing: number,
): ChartPoint[] {
  const kept = rows.filter((row) => keys.some((k) => row.values[k] !== undefined));
  const smoothed = keys.map((k) =>
    ema(
      kept.map((row) => row.values[k]),
      smoothing,
    ),
  );
  return kept.map((row, i) => {
    const raw: Record<string, number> = {};
    const smooth: Record<string, number> = {};
    keys.forEach((k, j) => {
      const v = row.values[k];
      if (v !== undefined) raw[k] = v;
      const s = smoothed[j]?.[i];
      if (s !== undefined) smooth[k] = s;
    });
    return { step: row.step, raw, smooth };
  });
}

/** The points inside the range (all of them without one). */
export const inRange = (points: readonly ChartPoint[], range: StepRange | null): ChartPoint[] =>
  range ? points.filter((p) => p.step >= range.from && p.step <= range.to) : [...points];

/**
 * At most `max` points: the first, the last, and in each of equal runs of the
 * points between them the ones holding each key's lowest and highest recorded
 * value, so a spike survives thinning (a stride would skip it).
 */
export function thin(points: readonly ChartPoint[], keys: readonly string[], max = MAX_POINTS): ChartPoint[] {
  if (points.length <= max) return [...points];
  const perBucket = 2 * Math.max(1, keys.length);
  const buckets = Math.max(1, Math.floor((max - 2) / perBucket));
  const inner = points.length - 2;
  const keep = new Set<number>([0, points.length - 1]);
  for (let b = 0; b < buckets; b++) {
    const start = 1 + Math.floor((b * inner) / buckets);
    const end = 1 + Math.floor(((b + 1) * inner) / buckets);
    if (start >= end) continue;
    let any = false;
    for (const k of keys) {
      let lo = -1;
      let hi = -1;
      for (let i = start; i < end; i++) {
        const v = points[i]?.raw[k];
        if (v === undefined) continue;
        if (lo < 0 || v < (points[lo]?.raw[k] as number)) lo = i;
        if (hi < 0 || v > (points[hi]?.raw[k] as number)) hi = i;
      }
      if (lo >= 0) {
        keep.add(lo);
        keep.add(hi);
        any = true;
      }
    }
    if (!any) keep.add(start);
  }
  return [...keep].sort((a, b) => a - b).map((i) => points[i] as ChartPoint);
}

/** A "mean ± std" band around the smoothed mean (the std smoothed alike), or null where either is missing. */
export function band(point: ChartPoint, mean: string, std: string): [number, number] | null {
  const m = point.smooth[mean];
  const s = point.smooth[std];
  return m === undefined || s === undefined ? null : [m - s, m + s];
}

/** Every value a chart draws for `keys`, recorded and smoothed (what its y axis must show). */
export const drawnValues = (points: readonly ChartPoint[], keys: readonly string[]): number[] =>
  points.flatMap((p) =>
    keys.flatMap((k) => [p.raw[k], p.smooth[k]].filter((v): v is number => v !== undefined)),
  );

/**
 * The y range: recharts' own ("auto", rounded to nice ticks) unless the values
 * are all equal (a reward stuck at -0.1, a zero loss), which gets a band of
 * one order of magnitude around them instead of a zero-height axis.
 */
export function yDomain(values: readonly number[]): [number, number] | ["auto", "auto"] {
  if (values.length === 0) return ["auto", "auto"];
  // A loop rather than Math.min(...values): a long job has more values than a call takes arguments.
  let min = Number.POSITIVE_INFINITY;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (max - min > 1e-9 * Math.max(1, Math.abs(max))) return ["auto", "auto"];
  const pad = max === 0 ? 1 : 10 ** Math.floor(Math.log10(Math.abs(max)));
  // Counts and rates that cannot go negative keep their axis at or above zero.
  return [min >= 0 ? Math.max(0, min - pad) : min - pad, max + pad];
}

/** The step axis: the zoomed range, else the data's, with room around a single step. */
export function xDomain(
  points: readonly ChartPoint[],
  range: StepRange | null,
): [number, number] | ["dataMin", "dataMax"] {
  if (range) return [range.from, range.to];
  const only = points.length === 1 ? points[0]?.step : undefined;
  return only === undefined ? ["dataMin", "dataMax"] : [Math.max(0, only - 1), only + 1];
}

/** The range a drag from one step to another selects, in order; null for a click (or a drag off the data). */
export function dragRange(a: number | undefined, b: number | undefined): StepRange | null {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || a === b)
    return null;
  return { from: Math.min(a, b), to: Math.max(a, b) };
}

/** What a metric's values are counted in, where its name does not say. */
const UNITS: Readonly<Record<string, string>> = {
  "loss/mean": "per token",
  "val/loss/mean": "per token",
  "loss/sum": "per step",
  "tokens/sum": "tokens",
  "staleness/max": "versions",
  "trajectories/dropped_stale": "trajectories",
  "policy/version": "version",
  "datums/count": "datums",
  "kl/mean": "nats per token",
  "logprob/mean": "nats",
};

/** A y-axis title: the metric's name, with its unit where one is known ("loss/mean (per token)"). */
export function axisTitle(metric: string): string {
  const unit = UNITS[metric];
  return unit ? `${metric} (${unit})` : metric;
}
