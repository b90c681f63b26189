// Builds the optional CUDA addon, build-cuda/opentinker_kernels_cuda.node: the
// Node-API binding in cuda/addon/ plus every cuda/kernels/*.cu (for sm_80,
// sm_90a and compute_80 PTX), linked with nvcc against the CUDA runtime
// *statically*, so the file loads on a machine without a driver (where its
// probe() reports cudaErrorInsufficientDriver). Runs after the CPU build in
// `npm ci` (package.json "install").
//
// Never breaks an install: without nvcc it prints one line saying the addon was
// skipped and exits 0; a failed build prints one line with the reason (the whole
// log goes to build-cuda/build.log) and exits 0 too, unless --strict
// (`npm run build:cuda`), which exits 1 for either.
//
// nvcc is looked for in OT_NVCC (a path, or "none" to build no CUDA addon), then
// PATH, then $CUDA_HOME/bin, then /usr/local/cuda/bin.
// --print-nvcc prints the nvcc it would use (nothing if none) and exits.
import { spawn, spawnSync } from "node:child_process";
import {
  accessSync,
  constants,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  renameSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const cudaDir = path.join(packageDir, "cuda");
const outDir = path.join(packageDir, "build-cuda");
const outFile = path.join(outDir, "opentinker_kernels_cuda.node");
const failedNote = path.join(outDir, "build-failed.txt");
const logFile = path.join(outDir, "build.log");
const strict = process.argv.includes("--strict");
const SKIPPED = "kernels: nvcc not found; the CUDA addon was skipped (the CPU kernels are built)";
// What the gate checks (cuda/scripts/compile-gate.sh): the A100 and H100 cubins,
// and compute_80 PTX that a newer GPU JIT-compiles.
const TARGETS = [
  "-gencode=arch=compute_80,code=sm_80",
  "-gencode=arch=compute_90a,code=sm_90a",
  "-gencode=arch=compute_80,code=compute_80",
];
const STEP_TIMEOUT_MS = 300_000;

function executable(file) {
  try {
    accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The nvcc to use, or null. */
function findNvcc(env) {
  const chosen = env.OT_NVCC;
  if (chosen === "none") return null;
  if (chosen) return executable(chosen) ? path.resolve(chosen) : null;
  for (const dir of (env.PATH ?? "").split(path.delimiter)) {
    if (dir && executable(path.join(dir, "nvcc"))) return path.join(dir, "nvcc");
  }
  if (env.CUDA_HOME && executable(path.join(env.CUDA_HOME, "bin", "nvcc"))) {
    return path.join(env.CUDA_HOME, "bin", "nvcc");
  }
  if (executable("/usr/local/cuda/bin/nvcc")) return "/usr/local/cuda/bin/nvcc";
  return null;
}

/** Ends the script: one line, exit 0 (an install goes on with the CPU kernels) unless --strict. */
function giveUp(line) {
  console.log(line);
  process.exit(strict ? 1 : 0);
}

/** A failed build: removes a stale addon, leaves the reason beside the log, one line out. */
function failed(reason) {
  const line = reason.replace(/\s+/g, " ").trim().slice(0, 400);
  rmSync(outFile, { force: true });
  writeFileSync(failedNote, `${line}\n`);
  giveUp(
    `kernels: the CUDA addon failed to build (${line}); the CPU kernels are built (log: build-cuda/build.log)`,
  );
}

const log = [];

/** Runs one compiler step; resolves with its output, rejects with the first line that says what went wrong. */
function step(command, args) {
  const line = `$ ${[command, ...args].join(" ")}`;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: packageDir, timeout: STEP_TIMEOUT_MS });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.on("error", (error) => reject(new Error(`${path.basename(command)}: ${error.message}`)));
    child.on("close", (code, signal) => {
      log.push(line, output);
      if (code === 0) return resolve(output);
      const lines = output.split("\n").filter((l) => l.trim() !== "");
      const first =
        lines.find((l) => /error|fatal|cannot|undefined reference/i.test(l)) ?? lines.at(-1) ?? "";
      const how = signal ? `killed by ${signal}` : `exit ${code}`;
      reject(new Error(`${path.basename(command)} ${how}: ${first}`));
    });
  });
}

function nodeHeaders() {
  const prefix = process.env.npm_config_nodedir ?? path.resolve(path.dirname(process.execPath), "..");
  const dir = path.join(prefix, "include", "node");
  return existsSync(path.join(dir, "node_api.h")) ? dir : null;
}

const nvcc = findNvcc(process.env);
if (process.argv.includes("--print-nvcc")) {
  if (nvcc) console.log(nvcc);
  process.exit(0);
}
if (!nvcc) giveUp(SKIPPED);

const started = performance.now();
mkdirSync(outDir, { recursive: true });
const headers = nodeHeaders();
if (!headers) {
  failed(
    `Node's headers are not in ${path.dirname(process.execPath)}/../include/node; set npm_config_nodedir`,
  );
}
let addonApi;
try {
  addonApi = path.dirname(createRequire(import.meta.url).resolve("node-addon-api/package.json"));
} catch {
  failed("node-addon-api is not installed");
}
const version = spawnSync(nvcc, ["--version"], { encoding: "utf8" });
const release = /release ([0-9.]+)/.exec(version.stdout ?? "")?.[1];
if (!release) failed(`${nvcc} --version did not run: ${version.error?.message ?? version.stderr}`);

const work = mkdtempSync(path.join(outDir, "obj-"));
const kernels = readdirSync(path.join(cudaDir, "kernels"))
  .filter((f) => f.endsWith(".cu"))
  .sort();
const objects = [];
const hostFlags = ["-Xcompiler", "-fPIC,-fvisibility=hidden"];
const compiles = kernels.map((cu) => {
  const object = path.join(work, cu.replace(/\.cu$/, ".o"));
  objects.push(object);
  return step(nvcc, [
    "-std=c++17",
    "-O3",
    ...TARGETS,
    ...hostFlags,
    `-I${path.join(cudaDir, "include")}`,
    "-c",
    path.join(cudaDir, "kernels", cu),
    "-o",
    object,
  ]);
});
// The Node-API side (probe, and the Device of addon/device_binding.cc) and the
// runtime layer it owns: host code, compiled by nvcc's host compiler.
const hostSources = [
  path.join("addon", "probe_binding.cc"),
  path.join("addon", "device_binding.cc"),
  path.join("runtime", "allocator.cpp"),
  path.join("runtime", "cuda_device_api.cpp"),
];
for (const source of hostSources) {
  const object = path.join(work, `${path.basename(source).replace(/\.\w+$/, "")}.host.o`);
  objects.push(object);
  compiles.push(
    step(nvcc, [
      "-std=c++20",
      "-O2",
      ...hostFlags,
      "-Xcompiler",
      "-fexceptions,-Wall,-Wextra",
      "-DNAPI_VERSION=8",
      "-DNODE_ADDON_API_DISABLE_DEPRECATED",
      "-DNAPI_CPP_EXCEPTIONS",
      `-I${headers}`,
      `-I${addonApi}`,
      "-c",
      path.join(cudaDir, source),
      "-o",
      object,
    ]),
  );
}

let failure;
try {
  await Promise.all(compiles);
  const linked = path.join(work, "opentinker_kernels_cuda.node");
  // The runtime statically; its symbols stay inside this file (--exclude-libs), so
  // another CUDA library in the process cannot clash with them.
  await step(nvcc, [
    "-shared",
    "-cudart",
    "static",
    "-Xlinker",
    "--exclude-libs,ALL",
    ...objects,
    "-o",
    linked,
  ]);
  // It must load in Node and answer probe() (no driver here is an answer, not a failure).
  const check = spawnSync(
    process.execPath,
    ["-e", `process.stdout.write(JSON.stringify(require(${JSON.stringify(linked)}).probe()))`],
    { encoding: "utf8", timeout: 60_000 },
  );
  if (check.status !== 0) {
    const lines = `${check.stderr ?? ""}`.split("\n").filter((l) => /Error/.test(l));
    throw new Error(
      `the built addon does not load: ${lines[0] ?? check.error?.message ?? `exit ${check.status}`}`,
    );
  }
  const probe = JSON.parse(check.stdout);
  renameSync(linked, outFile);
  rmSync(failedNote, { force: true });
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  const found = probe.ok
    ? `${probe.devices.length} device(s): ${probe.devices.map((d) => `${d.name} (sm_${d.computeCapability.replace(".", "")})`).join(", ")}`
    : probe.error;
  console.log(
    `kernels: built build-cuda/opentinker_kernels_cuda.node with nvcc ${release} in ${seconds} s ` +
      `(${kernels.length} kernel file(s) for sm_80, sm_90a + compute_80 PTX; CUDA runtime linked statically); probe: ${found}`,
  );
} catch (error) {
  failure = error instanceof Error ? error.message : String(error);
} finally {
  writeFileSync(logFile, `${log.join("\n")}\n`);
  rmSync(work, { recursive: true, force: true });
}
if (failure) failed(failure);
