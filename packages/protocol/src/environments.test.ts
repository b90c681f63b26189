import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ZBuiltinEnvConfig } from "./environments.ts";

describe("built-in environment settings", () => {
  it("bound the format penalty to a penalty on the rewards' scale", () => {
    for (const formatPenalty of [1e308, -1e38, -101, 0.5])
      expect(ZBuiltinEnvConfig.safeParse({ formatPenalty }).success, String(formatPenalty)).toBe(false);
    for (const formatPenalty of [-100, -1, -0.1, 0])
      expect(ZBuiltinEnvConfig.parse({ formatPenalty })).toEqual({ formatPenalty });
  });

  it("give every numeric setting a finite lower and upper bound", () => {
    const unbounded = Object.entries(ZBuiltinEnvConfig.shape).flatMap(([name, field]) => {
      const inner = field.unwrap();
      if (!(inner instanceof z.ZodNumber)) return [];
      const bounded = Number.isFinite(inner.minValue) && Number.isFinite(inner.maxValue);
      return bounded ? [] : [name];
    });
    expect(unbounded).toEqual([]);
  });
});
