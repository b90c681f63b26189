import { describe, expect, it } from "vitest";
import {
  EMPTY_TABLE,
  formatNumber,
  latestValue,
  listedMetrics,
  mergePoints,
  mergeStep,
  mergeSteps,
  tableRows,
} from "./metric-table.ts";

describe("metric table", () => {
  it("a step received both as history and live is one row", () => {
    let table = mergePoints(EMPTY_TABLE, [
      { step: 0, name: "reward/mean", value: 0.5 },
      { step: 0, name: "reward/std", value: 0.1 },
      { step: 1, name: "reward/mean", value: 0.6 },
    ]);
    table = mergeStep(table, 1, { "reward/mean": 0.6, "reward/std": 0.2 });
    table = mergePoints(table, [{ step: 1, name: "reward/mean", value: 0.6 }]);
    expect(tableRows(table)).toEqual([
      { step: 0, values: { "reward/mean": 0.5, "reward/std": 0.1 } },
      { step: 1, values: { "reward/mean": 0.6, "reward/std": 0.2 } },
    ]);
  });

  it("a batch of live steps merges like the steps one by one", () => {
    const events: { step: number; values: Record<string, number> }[] = [
      { step: 1, values: { a: 1 } },
      { step: 0, values: { a: 0 } },
      { step: 1, values: { b: 2 } },
    ];
    const oneByOne = events.reduce((t, e) => mergeStep(t, e.step, e.values), EMPTY_TABLE);
    expect(tableRows(mergeSteps(EMPTY_TABLE, events))).toEqual(tableRows(oneByOne));
  });

  it("rows come in step order whatever order they arrived in", () => {
    const table = mergeStep(mergeStep(mergeStep(EMPTY_TABLE, 2, { a: 2 }), 0, { a: 0 }), 1, { a: 1 });
    expect(tableRows(table).map((r) => r.step)).toEqual([0, 1, 2]);
  });

  it("merging leaves the previous table untouched (React state)", () => {
    const before = mergeStep(EMPTY_TABLE, 0, { a: 1 });
    mergeStep(before, 0, { a: 2 });
    expect(before.get(0)).toEqual({ a: 1 });
  });

  it("a metric named like the step does not clobber the step", () => {
    const rows = tableRows(mergeStep(EMPTY_TABLE, 3, { step: 99 }));
    expect(rows[0]?.step).toBe(3);
  });

  it("the latest value skips steps that lack the metric", () => {
    const rows = tableRows(mergeStep(mergeStep(EMPTY_TABLE, 0, { "val/reward/mean": 1 }), 1, { x: 0 }));
    expect(latestValue(rows, "val/reward/mean")).toBe(1);
    expect(latestValue(rows, "missing")).toBeUndefined();
  });

  it("formats figures compactly", () => {
    expect(formatNumber(12345)).toBe("12,345");
    expect(formatNumber(0.123456)).toBe("0.1235");
    expect(formatNumber(0.00001234)).toBe("1.23e-5");
  });

  it("all metrics leaves out the step bookkeeping, which would read as the step off by one", () => {
    expect(listedMetrics({ "reward/mean": 0.5, step: 197, "step/value": 198, "grad_norm/value": 2 })).toEqual(
      [
        ["grad_norm/value", 2],
        ["reward/mean", 0.5],
      ],
    );
  });
});
