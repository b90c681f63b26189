// Builds the native addon with node-gyp, offline: against the headers of the Node
// that runs it (never a header download). `--variant noblas` builds a second copy
// without OpenBLAS into build-noblas/, to test the addon's own kernels alone.
import { spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, rmSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const require = createRequire(import.meta.url);
const nodeGyp = require.resolve("node-gyp/bin/node-gyp.js");
// Where node-addon-api lives, so a copy of the sources elsewhere still finds it.
const modulesDir = path.resolve(path.dirname(require.resolve("node-addon-api/package.json")), "..");
const variantFlag = process.argv.indexOf("--variant");
const variant = variantFlag >= 0 ? process.argv[variantFlag + 1] : "default";

function headersDir() {
  if (process.env.npm_config_nodedir) return process.env.npm_config_nodedir;
  const prefix = path.resolve(path.dirname(process.execPath), "..");
  if (existsSync(path.join(prefix, "include", "node", "node_api.h"))) return prefix;
  console.error(
    `kernels: Node's headers are not in ${prefix}/include/node; install them or set npm_config_nodedir`,
  );
  process.exit(1);
}

// --incremental: recompile only what changed (after a first full build).
const incremental = process.argv.includes("--incremental");

function build(cwd, env) {
  const makefile = path.join(cwd, "build", "Makefile");
  const upToDate =
    existsSync(makefile) && statSync(makefile).mtimeMs >= statSync(path.join(cwd, "binding.gyp")).mtimeMs;
  if (incremental && !upToDate) run(cwd, env, ["configure"]);
  run(cwd, env, [incremental ? "build" : "rebuild", "-j", String(availableParallelism())]);
}

function run(cwd, env, command) {
  const args = [nodeGyp, ...command, "--release", `--nodedir=${headersDir()}`];
  const result = spawnSync(process.execPath, args, {
    cwd,
    stdio: "inherit",
    env: { ...process.env, NODE_PATH: modulesDir, ...env },
  });
  if (result.status !== 0) {
    console.error("kernels: the native build failed; it needs g++ (C++17), make and python3");
    process.exit(result.status ?? 1);
  }
}

if (variant === "default") {
  build(packageDir, {});
} else if (variant === "noblas") {
  // node-gyp always builds into ./build, so build a copy of the sources elsewhere.
  const scratch = mkdtempSync(path.join(tmpdir(), "ot-kernels-noblas-"));
  for (const entry of ["binding.gyp", "package.json", "src/cpu", "src/binding.cc", "scripts"]) {
    cpSync(path.join(packageDir, entry), path.join(scratch, entry), { recursive: true });
  }
  build(scratch, { OPENTINKER_KERNELS_BLAS: "off" });
  const out = path.join(packageDir, "build-noblas");
  mkdirSync(out, { recursive: true });
  cpSync(
    path.join(scratch, "build", "Release", "opentinker_kernels.node"),
    path.join(out, "opentinker_kernels.node"),
  );
  rmSync(scratch, { recursive: true, force: true });
  console.log("kernels: built build-noblas/opentinker_kernels.node without OpenBLAS");
} else {
  console.error(`kernels: unknown variant ${variant} (expected default or noblas)`);
  process.exit(2);
}
