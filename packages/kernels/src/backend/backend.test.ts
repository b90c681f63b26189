import { existsSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { type CudaAddonLoad, type CudaDevice, type CudaProbe, probeReason } from "../cuda-addon.ts";
import { embedding, rmsNorm } from "../ops/elementwise.ts";
import { linear } from "../ops/gemm.ts";
import { createLoraTable, loraForward } from "../ops/lora.ts";
import { logSoftmaxGather } from "../ops/loss.ts";
import { sampleDraws, sampleRows } from "../ops/sample.ts";
import { randomF32, rng } from "../test-utils.ts";
import type { Backend } from "./backend.ts";
import { elementCount } from "./buffer.ts";
import { CpuBackend } from "./cpu.ts";
import { CudaBackend } from "./cuda/cuda.ts";
import { CUDA_EMU_ADDON_FILE, openEmulatedDevice } from "./cuda/device.ts";
import { parseDeviceChoice, selectBackend } from "./select.ts";
import { HostAccessError, StrictBackend } from "./strict.ts";

const D = 16;
const V = 40;
const N = 6;

/** A small model step, written once over the seam: tokens in, sampled tokens and their logprobs out. */
function step(be: Backend, w: ReturnType<typeof weightsOf>, ids: Int32Array, slots: Int32Array) {
  const table = be.upload(w.embed, [V, D]);
  const h = be.alloc("f32", [N, D]);
  be.embedding(be.upload(ids), table, h, N, V, D);
  const xn = be.alloc("f32", [N, D]);
  be.rmsNorm(h, be.upload(w.norm), xn, null, N, D, 1e-6);
  const y = be.alloc("f32", [N, D]);
  be.linear(xn, be.upload(w.proj, [D, D]), y, N, D, D);
  const lora = be.createLoraTable(D, D, [
    { a: be.upload(w.a, [4, D]), b: be.upload(w.b, [D, 4]), scale: 0.5 },
  ]);
  be.loraForward(xn, N, be.upload(slots), lora, y);
  const last = be.alloc("f32", [2, D]);
  be.gatherRows(y, be.upload(Int32Array.of(N - 1, 2)), D, last);
  const logits = be.alloc("f32", [2, V]);
  be.linear(last, table, logits, 2, D, V);
  const draws = sampleDraws(2);
  draws.rowOf.set([0, 1]);
  draws.temperatures.fill(1);
  draws.uniforms.set([0.25, 0.75]);
  return be.sampleRows(logits, V, draws);
}

function weightsOf(seed: number) {
  const random = rng(seed);
  return {
    embed: randomF32(V * D, random),
    norm: randomF32(D, random, 2),
    proj: randomF32(D * D, random, 0.3),
    a: randomF32(4 * D, random, 0.3),
    b: randomF32(D * 4, random, 0.3),
  };
}

/** The same step over the free functions, as the engine computes today. */
function stepToday(w: ReturnType<typeof weightsOf>, ids: Int32Array, slots: Int32Array) {
  const h = new Float32Array(N * D);
  embedding(ids, w.embed, h, N, V, D);
  const xn = new Float32Array(N * D);
  rmsNorm(h, w.norm, xn, null, N, D, 1e-6);
  const y = new Float32Array(N * D);
  linear(xn, w.proj, y, N, D, D);
  loraForward(xn, N, slots, createLoraTable(D, D, [{ a: w.a, b: w.b, scale: 0.5 }]), y);
  const last = new Float32Array(2 * D);
  last.set(y.subarray((N - 1) * D, N * D), 0);
  last.set(y.subarray(2 * D, 3 * D), D);
  const logits = new Float32Array(2 * V);
  linear(last, w.embed, logits, 2, D, V);
  const draws = sampleDraws(2);
  draws.rowOf.set([0, 1]);
  draws.temperatures.fill(1);
  draws.uniforms.set([0.25, 0.75]);
  return sampleRows(logits, V, draws);
}

describe("the device seam", () => {
  const w = weightsOf(7);
  const ids = Int32Array.of(3, 9, 0, 39, 12, 5);
  const slots = Int32Array.of(0, -1, 0, 0, -1, 0);

  it("gives today's bits on the CPU and on the strict backend", () => {
    const today = stepToday(w, ids, slots);
    for (const be of [new CpuBackend(), new StrictBackend()]) {
      const out = step(be, w, ids, slots);
      expect(Array.from(be.download(out.tokens))).toEqual(Array.from(today.tokens));
      expect(Array.from(be.download(out.logprobs))).toEqual(Array.from(today.logprobs));
    }
  });

  it("the strict backend sees no download between a step's inputs and its tokens", () => {
    const be = new StrictBackend();
    const out = step(be, w, ids, slots);
    expect(be.takeTransfers().filter((t) => t.direction === "download")).toEqual([]);
    be.download(out.tokens);
    be.download(out.logprobs);
    expect(be.takeTransfers().map((t) => `${t.direction} ${t.dtype}[${t.shape.join(",")}]`)).toEqual([
      "download i32[2]",
      "download f64[2]",
    ]);
  });

  it("strict buffers refuse host access and never alias host memory", () => {
    const be = new StrictBackend();
    const data = Float32Array.of(1, 2, 3);
    const buffer = be.upload(data);
    expect(() => be.host(buffer)).toThrow(HostAccessError);
    expect(Object.values(buffer).some((v) => ArrayBuffer.isView(v))).toBe(false);
    data[0] = 99;
    const back = be.download(buffer);
    expect(Array.from(back)).toEqual([1, 2, 3]);
    back[1] = 99;
    expect(Array.from(be.download(buffer))).toEqual([1, 2, 3]);
  });

  it("the CPU backend is zero-copy", () => {
    const be = new CpuBackend();
    const data = Float32Array.of(1, 2, 3);
    expect(be.download(be.upload(data))).toBe(data);
  });

  it("refuses another backend's buffer, and views or writes outside a buffer, naming them", () => {
    const cpu = new CpuBackend();
    const strict = new StrictBackend();
    const a = cpu.alloc("f32", [2, 3]);
    expect(() => strict.addInPlace(a, strict.alloc("f32", [2, 3]))).toThrow(
      /a cpu buffer \[2, 3\] was given to the strict backend/,
    );
    expect(() => cpu.view(a, 4, [3])).toThrow(/view \[3\] at 4 is outside a buffer of 6 elements/);
    expect(() => cpu.write(a, new Float32Array(4), 3)).toThrow(/overruns a buffer of 6/);
    expect(() => elementCount([2, -1])).toThrow(/buffer shape \[2, -1\]: -1 is not a size/);
    cpu.free(a);
    expect(() => cpu.fill(a, 1)).toThrow(/a cpu buffer \[2, 3\] was used after it was freed/);
  });

  it("reuses the memory of a freed buffer it allocated, zeroed; never an uploaded array", () => {
    const be = new CpuBackend();
    const a = be.alloc("f32", [4]);
    be.fill(a, 7);
    const memory = be.download(a);
    be.free(a);
    const b = be.alloc("f32", [2, 2]);
    expect(be.download(b)).toBe(memory);
    expect(Array.from(be.download(b))).toEqual([0, 0, 0, 0]);
    const mine = Float32Array.of(1, 2, 3, 4);
    be.free(be.upload(mine));
    expect(be.download(be.alloc("f32", [4]))).not.toBe(mine);
    expect(Array.from(mine)).toEqual([1, 2, 3, 4]);
  });

  it("views share memory: a write through a view lands in its buffer", () => {
    const be = new StrictBackend();
    const x = be.alloc("f32", [3, 2]);
    be.addInPlace(be.view(x, 2, [2]), be.upload(Float32Array.of(5, 6)));
    expect(Array.from(be.download(x))).toEqual([0, 0, 5, 6, 0, 0]);
  });

  it("moves rows, sums rows and copies KV blocks", () => {
    const be = new StrictBackend();
    const target = be.alloc("f32", [3, 2]);
    be.scatterRows(target, be.upload(Int32Array.of(2, 0)), 2, be.upload(Float32Array.of(1, 2, 3, 4)));
    expect(Array.from(be.download(target))).toEqual([3, 4, 0, 0, 1, 2]);
    const bias = be.upload(Float32Array.of(1, 1));
    be.sumRows(target, 3, 2, bias);
    expect(Array.from(be.download(bias))).toEqual([5, 7]);
    const cache = be.createKvCache(3, 2, 1, 2);
    be.write(cache.key, Float32Array.of(1, 2, 3, 4), 0);
    be.copyBlocks([cache], [{ from: 0, to: 2, tokens: 1 }]);
    expect(Array.from(be.download(cache.key))).toEqual([1, 2, 3, 4, 0, 0, 0, 0, 1, 2, 0, 0]);
  });

  it("the reference KL is zero against itself and positive against another model, with gradient p − q", () => {
    const be = new CpuBackend();
    const random = rng(3);
    const logits = randomF32(2 * V, random, 3);
    const other = randomF32(2 * V, random, 3);
    const targets = new Int32Array(2);
    const lse = logSoftmaxGather(logits, targets, V).lse;
    const otherLse = logSoftmaxGather(other, targets, V).lse;
    const up = (a: Float32Array) => be.upload(a);
    const self = be.download(
      be.referenceKl(
        up(logits),
        up(lse),
        up(logits),
        up(lse),
        up(Float32Array.of(1, 2)),
        V,
        be.alloc("f32", [2, V]),
      ),
    );
    expect(Math.abs(self[0] as number)).toBeLessThan(1e-6);
    const dLogits = be.alloc("f32", [2, V]);
    const kl = be.download(
      be.referenceKl(up(logits), up(lse), up(other), up(otherLse), up(Float32Array.of(1, 0)), V, dLogits),
    );
    expect(kl[0]).toBeGreaterThan(0);
    expect(kl[1]).toBe(0);
    const g = be.download(dLogits);
    const p0 = Math.exp((logits[0] as number) - (lse[0] as number));
    const q0 = Math.exp((other[0] as number) - (otherLse[0] as number));
    expect(g[0]).toBeCloseTo(p0 - q0, 6);
    expect(g[V]).toBe(0);
  });
});

describe("choosing a device", () => {
  it("accepts auto, cpu, cuda:N and cuda-emulated, and names anything else", () => {
    expect(parseDeviceChoice("cuda:1")).toBe("cuda:1");
    expect(parseDeviceChoice("cuda-emulated")).toBe("cuda-emulated");
    expect(() => parseDeviceChoice("gpu")).toThrow('WORKER_DEVICE="gpu": expected auto, cpu or cuda:N');
    expect(() => parseDeviceChoice("cuda:01")).toThrow(/expected auto, cpu or cuda:N/);
  });

  it("auto falls back to the CPU saying why in one line; cuda:N without a usable device is refused", () => {
    // This machine's own CUDA addon, whatever it finds (src/cuda-addon.test.ts checks the no-driver case).
    const auto = selectBackend("auto");
    expect(auto.backend.device.kind).toBe("cpu");
    expect(auto.fallback).toMatch(/^device auto: .*using the CPU$/);
    expect(auto.fallback).not.toContain("\n");
    expect(selectBackend("cpu").fallback).toBeNull();
    expect(() => selectBackend("cuda:0")).toThrow(
      /^WORKER_DEVICE=cuda:0: no usable CUDA device 0 \(.+\); use auto or cpu$/,
    );
  });

  const probe = (devices: CudaDevice[], code = 0, error: string | null = null): CudaProbe => ({
    ok: devices.length > 0,
    code,
    error,
    runtimeVersion: 13000,
    driverVersion: devices.length > 0 ? 13000 : 0,
    devices,
  });
  // A fake addon whose device is the emulated one, where it was built.
  const addon = {
    probe: () => probe([]),
    launchers: [],
    openDevice: (index: number) => {
      if (!existsSync(CUDA_EMU_ADDON_FILE))
        throw new Error(`cuda:${index}: the emulated device is not built`);
      return openEmulatedDevice();
    },
  };

  it("without a usable CUDA device, auto says the probe's reason and cuda:N is refused with it", () => {
    const noDriver = probe(
      [],
      35,
      "cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version",
    );
    const cuda: CudaAddonLoad = {
      ok: false,
      reason: probeReason(noDriver),
      addon,
      probe: noDriver,
      file: "x.node",
    };
    expect(selectBackend("auto", cuda).fallback).toBe(
      "device auto: no usable CUDA device (CUDA: cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version); using the CPU",
    );
    expect(() => selectBackend("cuda:1", cuda)).toThrow(
      "WORKER_DEVICE=cuda:1: no usable CUDA device 1 (CUDA: cudaErrorInsufficientDriver (35): CUDA driver version is insufficient for CUDA runtime version); use auto or cpu",
    );
    const absent: CudaAddonLoad = {
      ok: false,
      reason: "this build has no CUDA addon (nvcc was not found at install)",
      addon: null,
      probe: null,
      file: null,
    };
    expect(selectBackend("auto", absent).fallback).toBe(
      "device auto: no usable CUDA device (this build has no CUDA addon (nvcc was not found at install)); using the CPU",
    );
  });

  it("with a GPU, auto still takes the CPU until the CUDA backend is verified on one; cuda:N opens it", () => {
    const h100 = {
      index: 0,
      name: "NVIDIA H100 80GB HBM3",
      totalBytes: 85_029_158_912,
      computeCapability: "9.0",
    };
    const found = probe([h100]);
    const cuda: CudaAddonLoad = { ok: true, addon, probe: found, file: "x.node" };
    const auto = selectBackend("auto", cuda);
    expect(auto.backend.device.kind).toBe("cpu");
    expect(auto.fallback).toBe(
      "device auto: cuda:0 is NVIDIA H100 80GB HBM3 (sm_90, 79.2 GiB), but auto takes the CUDA backend only once it is verified on a GPU (set WORKER_DEVICE=cuda:0 to use it); using the CPU",
    );
    if (existsSync(CUDA_EMU_ADDON_FILE)) {
      const opened = selectBackend("cuda:0", cuda);
      expect(opened.backend).toBeInstanceOf(CudaBackend);
      expect(opened.backend.device.name).toBe("cuda:0");
      expect(selectBackend("cuda-emulated").backend.device.description).toMatch(/emulated/);
    }
    expect(() => selectBackend("cuda:2", cuda)).toThrow(
      "WORKER_DEVICE=cuda:2: no CUDA device 2 here (this machine has 1: cuda:0); use auto or cpu",
    );
  });
});
