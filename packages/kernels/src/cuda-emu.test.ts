// The CUDA kernels (packages/kernels/cuda/) on a machine without a GPU: the
// CPU execution of the CUDA model is built with CMake and its C++ tests run
// (the harness against CUDA's semantics, every op in every checking mode),
// and the nvcc compile gate checks every .cu for sm_80 and sm_90a. Missing
// tools are a failure that says what to install, never a silent skip: CI
// (.ci/run) installs libboost-context-dev, and the machines have nvcc.
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { readKernelsEnv } from "./env.ts";

const CUDA_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..", "cuda");
// The emulated addon's build (scripts/build-cuda-emu.mjs, run by npm ci): the
// kernels it compiled are the tests' too, so they are not compiled twice.
const BUILD_DIR = path.resolve(CUDA_DIR, "..", "build-cuda", "emu");
const GATE = path.join(CUDA_DIR, "scripts", "compile-gate.sh");

function run(command: string, args: string[]) {
  const result = spawnSync(command, args, { cwd: CUDA_DIR, encoding: "utf8" });
  const killed = result.signal ? `\n(killed by ${result.signal})` : "";
  const output = `${result.stdout ?? ""}${result.stderr ?? ""}${killed}`;
  return { status: result.status ?? (result.error ? 127 : 1), output, missing: result.error !== undefined };
}

/** Runs the compile gate (on `files`, or every kernels/*.cu); exit 2 means no nvcc. */
function gate(files: string[] = []) {
  const result = run("bash", [GATE, ...files]);
  if (result.status === 2) {
    throw new Error(`the compile gate needs nvcc (CUDA 13 toolkit): ${result.output}`);
  }
  return result;
}

/** Runs a step that must succeed; its output is the failure message. */
function step(what: string, command: string, args: string[], install: string) {
  const result = run(command, args);
  if (result.missing) throw new Error(`${what}: ${command} not found; ${install}`);
  if (result.status !== 0) throw new Error(`${what} failed (exit ${result.status}):\n${result.output}`);
  return result.output;
}

// The kernels' suite is rerun with an instruction set forced (src/isa.test.ts);
// the CUDA side does not depend on that, and a second build into the same
// directory at the same time would race, so it runs only in the plain run.
const forcedIsa = readKernelsEnv().OPENTINKER_KERNELS_ISA;

describe.skipIf(forcedIsa !== undefined)("CUDA kernels without a GPU (packages/kernels/cuda)", () => {
  it("builds the CPU execution and passes its C++ tests in every checking mode (and the cuBLASLt loader's, against the fake library)", () => {
    const install = "install cmake, g++ and Debian's libboost-context-dev (.ci/run installs the last in CI)";
    step(
      "cmake configure",
      "cmake",
      ["-S", CUDA_DIR, "-B", BUILD_DIR, "-DCMAKE_BUILD_TYPE=Release"],
      install,
    );
    step("cmake build", "cmake", ["--build", BUILD_DIR, "-j", String(availableParallelism())], install);
    const output = step("ot_cuda_emu_tests", path.join(BUILD_DIR, "ot_cuda_emu_tests"), [], install);
    console.log(output.trim().split("\n").at(-1));
    expect(output).toMatch(/^\d+ tests, 0 failed, 0 failed checks$/m);
    // Every expected test ran (a test file dropped from the build would not fail otherwise).
    for (const name of [
      "shuffles_follow_cuda_semantics",
      "race_check_catches_racy_kernels",
      "nan_fill_exposes_uninitialised_shared_reads",
      "rmsnorm_matches_reference_in_every_mode",
      "mma_layout_of_a_and_c",
      "gemm_bf16_matches_reference_in_every_mode",
      "gemm_bf16_backward_matches_reference_in_every_mode",
      "gemm_f32_matches_reference_in_every_mode",
      "lora_matches_reference_and_cpu_backend_in_every_mode",
      "rope_matches_reference_in_every_mode",
      "swiglu_matches_reference_in_every_mode",
      "embedding_matches_reference_in_every_mode",
      "rmsnorm_backward_matches_reference_in_every_mode",
      "adamw_matches_reference_in_every_mode",
      "sum_of_squares_matches_reference_in_every_mode",
      "attention_cache_write_and_paged_attention_in_every_mode",
      "logprobs_matches_reference_and_cpu_backend_in_every_mode",
      "sample_draws_the_cpu_backends_tokens_in_every_mode",
      "attention_train_matches_reference_in_every_mode",
      "attention_train_matches_the_cpu_backend",
      "lora_rows_matches_reference_and_cpu_backend_in_every_mode",
      "gemm_f32_backward_input_matches_reference_in_every_mode",
      "gemm_f32_backward_weight_matches_reference_in_every_mode",
      "convert_f32_to_bf16_bit_exact_in_every_mode",
      "row_ops_elementwise_in_every_mode",
      "row_ops_sum_rows_in_every_mode",
      "reference_kl_matches_reference_in_every_mode",
      "unembed_matches_reference_and_cpu_backend_in_every_mode",
      "score_matches_cpu_backend_in_every_mode",
      "launchers_rmsnorm_matches_its_body_and_validates",
      "blaslt_reports_a_missing_symbol",
      "blaslt_gemm_row_major_mapping_by_value",
      "blaslt_gemm_destroys_everything_when_any_call_fails",
    ]) {
      expect(output).toContain(`ok   ${name}`);
    }
  }, 180_000);

  it("passes the nvcc compile gate for every .cu (sm_80, sm_90a, PTX; no spills)", () => {
    const result = gate();
    if (result.status !== 0)
      throw new Error(`the compile gate failed (exit ${result.status}):\n${result.output}`);
    console.log(result.output.trim());
    expect(result.output).toMatch(/ok {3}rmsnorm\.cu sm_80 .* 0 spill stores, 0 spill loads/);
    expect(result.output).toMatch(/ok {3}rmsnorm\.cu sm_90a .* 0 spill stores, 0 spill loads/);
    expect(result.output).toContain("ok   rmsnorm.cu compute_80 PTX contains shfl.sync.bfly");
  }, 180_000);

  it("the compile gate fails a kernel that spills, lacks its instruction, warns, states no budget or bypasses OT_KERNEL", () => {
    const dir = mkdtempSync(path.join(tmpdir(), "ot-compile-gate-"));
    try {
      // 96 live floats under a 32-register cap (launch bounds 1024 x 2) must spill.
      writeFileSync(
        path.join(dir, "spills.cu"),
        [
          "// compile-gate: max-registers 32",
          "// compile-gate: max-static-smem 0",
          "// compile-gate: ptx mma.sync",
          "__global__ void __launch_bounds__(1024, 2) spills(const float* x, float* y, int n) {",
          "  float acc[96];",
          "#pragma unroll",
          "  for (int i = 0; i < 96; ++i) acc[i] = x[threadIdx.x * 96 + i];",
          "  for (int k = 0; k < n; ++k)",
          "#pragma unroll",
          "    for (int i = 0; i < 96; ++i) acc[i] = acc[i] * acc[(i + 1) % 96] + 1.0f;",
          "#pragma unroll",
          "  for (int i = 0; i < 96; ++i) y[threadIdx.x * 96 + i] = acc[i];",
          "}",
          "",
        ].join("\n"),
      );
      writeFileSync(
        path.join(dir, "warns.cu"),
        "// compile-gate: max-registers 32\n// compile-gate: max-static-smem 0\n// compile-gate: ptx st.global\n" +
          "__global__ void warns(float* y) { int unused = 3; y[threadIdx.x] = 1.0f; }\n",
      );
      writeFileSync(path.join(dir, "unbudgeted.cu"), "__global__ void k(float* y) { y[0] = 1.0f; }\n");
      const result = gate(["spills.cu", "warns.cu", "unbudgeted.cu"].map((f) => path.join(dir, f)));
      expect(result.status, result.output).toBe(1);
      expect(result.output).toMatch(/FAIL spills\.cu sm_80 .*: spills/);
      expect(result.output).toContain("FAIL spills.cu compute_80 PTX lacks mma.sync");
      expect(result.output).toMatch(/FAIL warns\.cu: nvcc failed:[\s\S]*declared but never referenced/);
      expect(result.output).toContain("FAIL unbudgeted.cu states no budget");
      expect(result.output).toContain(
        "FAIL warns.cu: declares or launches a kernel directly (__global__ / <<<>>>)",
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
