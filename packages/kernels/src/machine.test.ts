import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { kernelInfo } from "./index.ts";
import { machineInfo } from "./machine.ts";

describe("machineInfo", () => {
  it("says which CPU flags and OpenBLAS a figure was measured with, agreeing with the addon and /proc", () => {
    const m = machineInfo();
    expect(m.cores).toBeGreaterThan(0);
    expect(m.openblas.addon).toBe(kernelInfo().blas === "openblas");
    // An addon linked against OpenBLAS means the library is installed.
    if (m.openblas.addon) expect(m.openblas.system).toMatch(/openblas/);
    const cpuinfo = (() => {
      try {
        return readFileSync("/proc/cpuinfo", "utf8");
      } catch {
        return "";
      }
    })();
    const flags = new Set(
      (
        cpuinfo
          .split("\n")
          .find((l) => l.startsWith("flags"))
          ?.split(":")[1] ?? ""
      )
        .trim()
        .split(/\s+/),
    );
    for (const flag of m.flags) expect(flags.has(flag)).toBe(true);
    if (flags.has("avx2")) expect(m.flags).toContain("avx2");
    if (flags.has("avx512f")) expect(m.flags).toContain("avx512f");
  });
});
