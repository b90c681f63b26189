// Builds the emulated CUDA addon, build-cuda/opentinker_kernels_cuda_emu.node:
// the same Device binding as the CUDA addon (cuda/addon/device_binding.cc) over
// host memory, every cuda/kernels/*.cu compiled by g++ (OT_CUDA_EMU) so its
// launchers run their kernels in the CPU execution. The engine's tests run the
// CUDA backend on it (OPENTINKER_DEVICE=cuda-emulated); no GPU or nvcc needed,
// only cmake, g++ and Boost.Context (Debian's libboost-context-dev).
//
// Never breaks an install: what is missing or failed is one line, exit 0,
// unless --strict (`npm run build:cuda-emu`). The log is build-cuda/emu-build.log.
import { spawnSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, renameSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const outDir = path.join(packageDir, "build-cuda");
const buildDir = path.join(outDir, "emu");
const outFile = path.join(outDir, "opentinker_kernels_cuda_emu.node");
const logFile = path.join(outDir, "emu-build.log");
const strict = process.argv.includes("--strict");
const log = [];

function giveUp(line) {
  writeFileSync(logFile, `${log.join("\n")}\n`);
  console.log(`kernels: ${line}`);
  process.exit(strict ? 1 : 0);
}

function run(command, args) {
  const result = spawnSync(command, args, { cwd: packageDir, encoding: "utf8", timeout: 900_000 });
  log.push(`$ ${[command, ...args].join(" ")}`, result.stdout ?? "", result.stderr ?? "");
  if (result.error) giveUp(`the emulated CUDA addon was skipped (${command}: ${result.error.message})`);
  if (result.status !== 0) {
    const output = `${result.stdout}\n${result.stderr}`.split("\n");
    const first = output.find((l) => /error|Boost|not found/i.test(l)) ?? output.filter(Boolean).at(-1) ?? "";
    giveUp(
      `the emulated CUDA addon failed to build (${first.trim().slice(0, 300)}) (log: build-cuda/emu-build.log)`,
    );
  }
}

const nodeInclude = path.join(
  process.env.npm_config_nodedir ?? path.resolve(path.dirname(process.execPath), ".."),
  "include",
  "node",
);
if (!existsSync(path.join(nodeInclude, "node_api.h"))) {
  giveUp(`the emulated CUDA addon was skipped (Node's headers are not in ${nodeInclude})`);
}
let addonApi = "";
try {
  addonApi = path.dirname(createRequire(import.meta.url).resolve("node-addon-api/package.json"));
} catch {
  giveUp("the emulated CUDA addon was skipped (node-addon-api is not installed)");
}

const started = performance.now();
mkdirSync(buildDir, { recursive: true });
run("cmake", [
  "-S",
  path.join(packageDir, "cuda"),
  "-B",
  buildDir,
  "-DCMAKE_BUILD_TYPE=Release",
  `-DOT_NODE_INCLUDE=${nodeInclude}`,
  `-DOT_NODE_ADDON_API=${addonApi}`,
]);
run("cmake", ["--build", buildDir, "--target", "opentinker_kernels_cuda_emu", "-j", "2"]);
// A new file renamed over the old: a process that has the old one loaded keeps its mapping.
copyFileSync(path.join(buildDir, "opentinker_kernels_cuda_emu.node"), `${outFile}.tmp`);
renameSync(`${outFile}.tmp`, outFile);
writeFileSync(logFile, `${log.join("\n")}\n`);
const seconds = ((performance.now() - started) / 1000).toFixed(1);
console.log(
  `kernels: built build-cuda/opentinker_kernels_cuda_emu.node (the emulated CUDA device) in ${seconds} s`,
);
