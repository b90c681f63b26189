import { describe, expect, it } from "vitest";
import {
  compareHref,
  jobColour,
  jobLabel,
  legendLabels,
  MAX_COMPARED,
  overlay,
  parseJobIds,
  type Run,
  sharedMetrics,
  standardCharts,
  toggleJob,
} from "./compare.ts";

const run = (key: string, ...steps: Record<string, number>[]): Run => ({
  key,
  rows: steps.map((values, step) => ({ step, values })),
});

describe("the compared jobs in the URL", () => {
  it("reads ?ids= trimmed, without blanks or repeats", () => {
    expect(parseJobIds(" a, b,,a ,c")).toEqual(["a", "b", "c"]);
    expect(parseJobIds(null)).toEqual([]);
    expect(parseJobIds("")).toEqual([]);
  });

  it("keeps at most as many jobs as there are colours", () => {
    const many = Array.from({ length: MAX_COMPARED + 3 }, (_, i) => `j${i}`);
    expect(parseJobIds(many.join(","))).toHaveLength(MAX_COMPARED);
    expect(toggleJob(many.slice(0, MAX_COMPARED), "extra")).toHaveLength(MAX_COMPARED);
    expect(new Set(many.slice(0, MAX_COMPARED).map((_, i) => jobColour(i))).size).toBe(MAX_COMPARED);
  });

  it("adds a picked job at the end and takes a picked one out", () => {
    expect(toggleJob(["a"], "b")).toEqual(["a", "b"]);
    expect(toggleJob(["a", "b"], "a")).toEqual(["b"]);
  });

  it("writes the ids back as the page's link", () => {
    expect(compareHref(["a", "b"])).toBe("/jobs/compare?ids=a,b");
    expect(compareHref([])).toBe("/jobs/compare");
  });
});

describe("legend labels", () => {
  it("use the job's name, else the random end of its id", () => {
    expect(jobLabel({ id: "cmabcdefgh123456", name: "arith · a1" })).toBe("arith · a1");
    expect(jobLabel({ id: "cmabcdefgh123456" })).toBe("job …123456");
    expect(jobLabel({ id: "cmabcdefgh123456", name: "  " })).toBe("job …123456");
    expect(jobLabel({ id: "cmabcdefgh123456", name: null })).toBe("job …123456");
  });

  it("tell apart jobs that share a name", () => {
    expect(
      legendLabels([
        { id: "c1aaaaaa", name: "arith" },
        { id: "c1bbbbbb", name: "arith" },
        { id: "c1cccccc", name: "nim" },
      ]),
    ).toEqual(["arith · aaaaaa", "arith · bbbbbb", "nim"]);
  });
});

describe("overlay", () => {
  it("puts each run's value of one metric under the run's key, step by step", () => {
    const rows = overlay(
      [
        run("a", { "reward/mean": 0.1 }, { "reward/mean": 0.2 }),
        run("b", { "reward/mean": 0.5 }, { loss: 1 }),
      ],
      "reward/mean",
    );
    expect(rows).toEqual([
      { step: 0, values: { a: 0.1, b: 0.5 } },
      { step: 1, values: { a: 0.2 } },
    ]);
  });

  it("is empty when no run recorded the metric", () => {
    expect(overlay([run("a", { x: 1 })], "y")).toEqual([]);
  });
});

describe("metrics to offer", () => {
  it("lists the metrics every run recorded, without the step's own number", () => {
    const runs = [
      run("a", { "reward/mean": 1, step: 0, "step/value": 1, "kl/mean": 0 }),
      run("b", { "reward/mean": 1, step: 0, "step/value": 1, "grad_norm/value": 2 }),
    ];
    expect(sharedMetrics(runs)).toEqual(["reward/mean"]);
    expect(sharedMetrics([])).toEqual([]);
  });

  it("draws a standard chart when any run has its metric", () => {
    const runs = [run("a", { "reward/mean": 1 }), run("b", { "kl/mean": 0.1 })];
    expect(standardCharts(runs).map((c) => c.metric)).toEqual(["reward/mean", "kl/mean"]);
  });
});
