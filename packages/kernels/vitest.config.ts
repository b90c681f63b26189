// The kernels' tests alone, without the repository's database setup: what
// src/isa.test.ts reruns with another instruction set forced.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["src/**/*.test.ts"],
    testTimeout: 120_000,
  },
});
