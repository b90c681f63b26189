import { kernelInfo } from "@opentinker/kernels";
import { afterEach, describe, expect, it, vi } from "vitest";
import { defaultBackend } from "../base-model.ts";
import { weightAs, widenWeight } from "../model/weight-dtype.ts";
import { frozenParams } from "../policy/frozen.ts";
import { Rng } from "../rng.ts";
import { QWEN25_05B_SHAPE, randomBaseModel } from "../testing/random-model.ts";
import { withPackedWeights } from "./packed-params.ts";

const CONFIG = {
  ...QWEN25_05B_SHAPE,
  hiddenSize: 48,
  intermediateSize: 80,
  numLayers: 2,
  numHeads: 4,
  numKvHeads: 2,
  headDim: 12,
  vocabSize: 70,
};

describe("withPackedWeights", () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it("packs every frozen f32 projection and the tied unembedding once, with the bits of the unpacked product", () => {
    const base = randomBaseModel(CONFIG, 5);
    const params = withPackedWeights(frozenParams(base));
    const again = withPackedWeights(frozenParams(base));
    const be = params.backend;
    const rng = new Rng(2);
    for (const [l, layer] of params.layers.entries()) {
      for (const name of ["q", "k", "v", "o", "gate", "up", "down"] as const) {
        const p = layer[name];
        expect(p.packed, `layer ${l} ${name}`).toBeDefined();
        expect(again.layers[l]?.[name].packed).toBe(p.packed); // shared, not packed twice
        const rows = 3;
        const x = be.upload(Float32Array.from({ length: rows * p.dIn }, () => rng.uniform(1)));
        const expected = be.alloc("f32", [rows, p.dOut]);
        be.linear(x, p.weight, expected, rows, p.dIn, p.dOut, false, "rows");
        const actual = be.alloc("f32", [rows, p.dOut]);
        if (p.packed) be.linearPacked(x, p.packed, actual, rows);
        expect(be.download(actual)).toEqual(be.download(expected));
      }
    }
    expect(params.unembed.packed?.dOut).toBe(CONFIG.vocabSize);
    expect(base.weights.lmHead).toBe(base.weights.embedTokens);
    expect(params.unembed.weight).toBe(params.embed.table); // tied: one matrix, one pack
  });

  // On the "amx" path the tiles sum in their own order (f32 accuracy, other bits),
  // and so does a device (bf16 tensor cores, activations in two halves): there
  // the packed product is checked against the f32 one to f32 precision.
  const bits = kernelInfo().isa !== "amx" && defaultBackend().device.kind === "cpu";
  it(`packs bf16 weights in bf16, with ${bits ? "the bits" : "f32 accuracy"} of the f32 product over the widened weight`, () => {
    const base = randomBaseModel(CONFIG, 6);
    const be = base.backend;
    const packWeight = vi.spyOn(be, "packWeight");
    const q = weightAs(base.weights.layers[0]?.qProj as Float32Array, "bf16");
    const layers = base.weights.layers.map((w, l) => (l === 0 ? { ...w, qProj: q } : w));
    const params = withPackedWeights(frozenParams({ ...base, weights: { ...base.weights, layers } }));
    const p = params.layers[0]?.q;
    if (!p?.packed) throw new Error("layer 0 q is not packed");
    expect(p.weight.dtype).toBe("bf16");
    // The pack was made from the bf16 weight itself (not a widened copy): its panels are bf16.
    const made = packWeight.mock.results.findIndex((r) => r.value === p.packed);
    expect(packWeight.mock.calls[made]?.[0]).toBe(p.weight);
    const rng = new Rng(3);
    const x = be.upload(Float32Array.from({ length: 2 * p.dIn }, () => rng.uniform(1)));
    const expectedOut = be.alloc("f32", [2, p.dOut]);
    be.linear(x, be.upload(widenWeight(q), [p.dOut, p.dIn]), expectedOut, 2, p.dIn, p.dOut, false, "rows");
    const actualOut = be.alloc("f32", [2, p.dOut]);
    be.linearPacked(x, p.packed, actualOut, 2);
    const [expected, actual] = [be.download(expectedOut), be.download(actualOut)];
    if (bits) expect(actual).toEqual(expected);
    for (const [i, value] of actual.entries()) expect(value).toBeCloseTo(expected[i] as number, 5);
  });
});
