import { describe, expect, it } from "vitest";
import {
  axisTitle,
  band,
  type ChartPoint,
  chartPoints,
  dragRange,
  drawnValues,
  ema,
  inRange,
  showMarkers,
  thin,
  xDomain,
  yDomain,
} from "./chart-data.ts";
import type { MetricRow } from "./metric-table.ts";

const rows = (...values: Record<string, number>[]): MetricRow[] =>
  values.map((v, step) => ({ step, values: v }));

describe("ema", () => {
  it("returns the values as they are at smoothing 0", () => {
    expect(ema([3, 1, 4, 1, 5], 0)).toEqual([3, 1, 4, 1, 5]);
  });

  it("is debiased: the first smoothed value is the first value, not pulled towards zero", () => {
    const [first, second] = ema([10, 20], 0.9) as number[];
    expect(first).toBeCloseTo(10);
    // (0.9·0.1·10 + 0.1·20) / (1 − 0.81)
    expect(second).toBeCloseTo((0.09 * 10 + 0.1 * 20) / 0.19);
  });

  it("keeps a constant series constant at any smoothing", () => {
    for (const w of [0.3, 0.6, 0.99]) for (const v of ema([2, 2, 2, 2], w)) expect(v).toBeCloseTo(2);
  });

  it("leaves gaps as gaps and skips them in the average", () => {
    const smoothed = ema([1, undefined, Number.NaN, 1], 0.5);
    expect(smoothed[1]).toBeUndefined();
    expect(smoothed[2]).toBeUndefined();
    expect(smoothed[3]).toBeCloseTo(1);
  });

  it("refuses a weight outside [0, 0.99]", () => {
    expect(() => ema([1], 1)).toThrow(/smoothing must be between 0 and 0.99, got 1/);
    expect(() => ema([1], -0.1)).toThrow(/smoothing/);
    expect(() => ema([1], Number.NaN)).toThrow(/smoothing/);
  });
});

describe("chartPoints", () => {
  it("keeps only the steps that recorded one of the keys, each key smoothed over its own steps", () => {
    const points = chartPoints(rows({ a: 0 }, { b: 5 }, { a: 10 }, { c: 1 }), ["a", "b"], 0.5);
    expect(points.map((p) => p.step)).toEqual([0, 1, 2]);
    expect(points[1]).toEqual({ step: 1, raw: { b: 5 }, smooth: { b: 5 } });
    // a's second value follows its first (step 0), not b's step in between.
    expect(points[2]?.smooth.a).toBeCloseTo((0.25 * 0 + 0.5 * 10) / 0.75);
    expect(points[2]?.raw).toEqual({ a: 10 });
  });

  it("smooths before zooming, so a zoomed point keeps its smoothed value", () => {
    const all = chartPoints(rows({ a: 0 }, { a: 10 }, { a: 20 }), ["a"], 0.6);
    const zoomed = inRange(all, { from: 2, to: 2 });
    expect(zoomed).toEqual([all[2]]);
    expect(zoomed[0]?.smooth.a).not.toBe(20);
  });
});

describe("inRange", () => {
  const points = chartPoints(rows({ a: 1 }, { a: 2 }, { a: 3 }, { a: 4 }), ["a"], 0);
  it("keeps both ends of the range", () => {
    expect(inRange(points, { from: 1, to: 2 }).map((p) => p.step)).toEqual([1, 2]);
  });
  it("keeps everything without a range", () => {
    expect(inRange(points, null)).toHaveLength(4);
  });
});

describe("thin", () => {
  const long = (n: number, at: (i: number) => number): ChartPoint[] =>
    chartPoints(
      Array.from({ length: n }, (_, step) => ({ step, values: { a: at(step) } })),
      ["a"],
      0,
    );

  it("keeps a short series whole", () => {
    const points = long(10, (i) => i);
    expect(thin(points, ["a"], 20)).toEqual(points);
  });

  it("draws at most the limit, first and last included, in step order", () => {
    const thinned = thin(
      long(10_000, (i) => Math.sin(i)),
      ["a"],
      600,
    );
    expect(thinned.length).toBeLessThanOrEqual(600);
    expect(thinned.length).toBeGreaterThan(500);
    expect(thinned[0]?.step).toBe(0);
    expect(thinned.at(-1)?.step).toBe(9_999);
    const steps = thinned.map((p) => p.step);
    expect(steps).toEqual([...steps].sort((a, b) => a - b));
  });

  it("keeps a one-step spike that a stride would skip", () => {
    const thinned = thin(
      long(10_000, (i) => (i === 4_321 ? 100 : 0)),
      ["a"],
      100,
    );
    expect(thinned.some((p) => p.step === 4_321)).toBe(true);
  });
});

describe("band", () => {
  it("spans the smoothed mean ± the smoothed std, and is missing without a std", () => {
    const [withStd, without] = chartPoints(rows({ m: 1, s: 0.5 }, { m: 2 }), ["m", "s"], 0) as ChartPoint[];
    expect(band(withStd as ChartPoint, "m", "s")).toEqual([0.5, 1.5]);
    expect(band(without as ChartPoint, "m", "s")).toBeNull();
  });
});

describe("axes", () => {
  it("scales y to both the recorded and the smoothed values", () => {
    const points = chartPoints(rows({ a: 0 }, { a: 10 }), ["a"], 0.9);
    expect(drawnValues(points, ["a"]).sort((x, y) => x - y)).toHaveLength(4);
  });

  it("gives equal values an axis one order of magnitude around them, never below zero for counts", () => {
    expect(yDomain([5, 5])).toEqual([4, 6]);
    expect(yDomain([0])).toEqual([0, 1]);
    expect(yDomain([-0.1, -0.1])).toEqual([-0.2, 0]);
    expect(yDomain([1, 2])).toEqual(["auto", "auto"]);
  });

  it("shows the zoomed range, and room around a single step", () => {
    const one = chartPoints(rows({ a: 1 }), ["a"], 0);
    expect(xDomain(one, null)).toEqual([0, 1]);
    expect(xDomain(one, { from: 3, to: 9 })).toEqual([3, 9]);
    expect(xDomain([...one, ...one], null)).toEqual(["dataMin", "dataMax"]);
  });

  it("zooms to a drag in either direction, and not on a click", () => {
    expect(dragRange(9, 3)).toEqual({ from: 3, to: 9 });
    expect(dragRange(3, 3)).toBeNull();
    expect(dragRange(3, undefined)).toBeNull();
  });

  it("titles a y axis with the metric and its unit", () => {
    expect(axisTitle("loss/mean")).toBe("loss/mean (per token)");
    expect(axisTitle("reward/mean")).toBe("reward/mean");
  });

  it("marks points only while there are a few dozen", () => {
    expect(showMarkers(40)).toBe(true);
    expect(showMarkers(41)).toBe(false);
  });
});
