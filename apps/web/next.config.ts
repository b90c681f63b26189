import path from "node:path";
import { fileURLToPath } from "node:url";
import type { NextConfig } from "next";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

const config: NextConfig = {
  // The monorepo root, so Next resolves hoisted node_modules and workspace packages.
  turbopack: { root: repoRoot },
  outputFileTracingRoot: repoRoot,
  // `npm run lint` typechecks every package; don't pay for it twice in the build.
  typescript: { ignoreBuildErrors: true },
  poweredByHeader: false,
};

export default config;
