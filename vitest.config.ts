import { defineConfig } from "vitest/config";

/** The engine's suites that run a second time on the strict backend (packages/engine/src/testing/strict-default.ts). */
const STRICT_SUITES = ["packages/engine/src/{nn,sampler,trainer,session,clients}/**/*.test.ts"];

/**
 * The engine's suites that run a third time on the CUDA backend over the
 * emulated device (cuda-emulated-default.ts): the strict set but the sampler's
 * batching and scheduling, which no kernel's numbers change (the strict
 * project runs them over the seam) and which take longest there.
 */
const CUDA_EMULATED_SUITES = STRICT_SUITES;
const CUDA_EMULATED_EXCLUDE = ["packages/engine/src/sampler/sampler-batching.test.ts"];

export default defineConfig({
  test: {
    exclude: ["**/node_modules/**", "**/generated/**"],
    globalSetup: ["packages/db/src/testing/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
    projects: [
      {
        extends: true,
        test: {
          name: "default",
          include: [
            "{packages,apps}/*/src/**/*.test.ts",
            "{packages,apps}/*/test/**/*.test.ts",
            "{packages,apps}/*/bench/**/*.test.ts",
            "test/**/*.test.ts",
          ],
        },
      },
      {
        extends: true,
        test: {
          name: "strict-backend",
          include: STRICT_SUITES,
          setupFiles: ["packages/engine/src/testing/strict-default.ts"],
        },
      },
      {
        extends: true,
        test: {
          name: "cuda-emulated",
          include: CUDA_EMULATED_SUITES,
          exclude: ["**/node_modules/**", "**/generated/**", ...CUDA_EMULATED_EXCLUDE],
          // The emulated device runs the kernels in the CPU execution, tens of
          // times slower than the CPU backend: the longest tests take ~17 s alone.
          testTimeout: 120_000,
          setupFiles: ["packages/engine/src/testing/cuda-emulated-default.ts"],
        },
      },
    ],
  },
});
