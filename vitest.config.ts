import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: [
      "{packages,apps}/*/src/**/*.test.ts",
      "{packages,apps}/*/test/**/*.test.ts",
      "{packages,apps}/*/bench/**/*.test.ts",
      "test/**/*.test.ts",
    ],
    exclude: ["**/node_modules/**", "**/generated/**"],
    globalSetup: ["packages/db/src/testing/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 120_000,
  },
});
