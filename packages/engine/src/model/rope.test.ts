import { describe, expect, it } from "vitest";
import { parseModelConfig } from "./config.ts";
import { type RopeSettings, ropeFrequencies } from "./rope.ts";

/** Every element within atol + rtol·|expected|. */
function expectClose(actual: ArrayLike<number>, expected: ArrayLike<number>, atol: number, rtol: number) {
  expect(actual.length).toBe(expected.length);
  for (let i = 0; i < expected.length; i++) {
    const e = expected[i] as number;
    expect(Math.abs((actual[i] as number) - e)).toBeLessThanOrEqual(atol + rtol * Math.abs(e));
  }
}

describe("ropeFrequencies", () => {
  const base: RopeSettings = { headDim: 8, maxPositionEmbeddings: 2048, ropeTheta: 10000, ropeScaling: null };

  it("default: θ^(−2k/dim) over the head, rope_theta in rope_scaling taking precedence", () => {
    const { invFreq, attentionScaling } = ropeFrequencies({ ...base, headDim: 4 });
    expectClose(invFreq, [1, 0.01], 0, 1e-7);
    expect(attentionScaling).toBe(1);
    const big = [1, 1e-1 ** 1.5, 1e-3, 1e-1 ** 4.5];
    expectClose(ropeFrequencies({ ...base, ropeTheta: 1e6 }).invFreq, big, 0, 1e-7);
    const inScaling = { ...base, ropeScaling: { rope_type: "default", rope_theta: 1e6 } };
    expectClose(ropeFrequencies(inScaling).invFreq, big, 0, 1e-7);
  });

  it("partial_rotary_factor shortens invFreq to int(head_dim · factor) / 2", () => {
    const partial = { ...base, ropeScaling: { rope_type: "default", partial_rotary_factor: 0.5 } };
    expectClose(ropeFrequencies(partial).invFreq, [1, 0.01], 0, 1e-7);
  });

  it("linear divides every frequency by the factor", () => {
    const linear = ropeFrequencies({ ...base, headDim: 4, ropeScaling: { type: "linear", factor: 2 } });
    expectClose(linear.invFreq, [0.5, 0.005], 0, 1e-7);
    expect(linear.attentionScaling).toBe(1);
  });

  it("dynamic NTK raises the base only beyond max_position_embeddings", () => {
    const config = {
      ...base,
      headDim: 4,
      maxPositionEmbeddings: 100,
      ropeScaling: { rope_type: "dynamic", factor: 2 },
    };
    // θ' = 10000 · (2 · 200 / 100 − 1)^(4 / 2) = 90000 → [1, 1/300]
    expectClose(ropeFrequencies(config, 200).invFreq, [1, 1 / 300], 0, 1e-7);
    // seqLen ≤ max_position_embeddings: (2 · 100 / 100 − 1)² = 1, the default frequencies
    expectClose(ropeFrequencies(config, 50).invFreq, [1, 0.01], 0, 1e-7);
    expectClose(ropeFrequencies(config).invFreq, [1, 0.01], 0, 1e-7);
  });

  it("yarn ramps between interpolated and extrapolated frequencies and scales attention", () => {
    // dim 8, θ 10000, original context 2048: correction dims 8·ln(2048 / (2π·β)) / (2 ln 10000)
    // = 1.0080 (β_fast 32) and 2.5132 (β_slow 1) → low 1, high 3; ramp over k = 0..3 is
    // [0, 0, 0.5, 1], so invFreq = [1, 0.1, 0.5·0.01/4 + 0.5·0.01, 0.001/4].
    const yarn = ropeFrequencies({ ...base, ropeScaling: { rope_type: "yarn", factor: 4 } });
    expectClose(yarn.invFreq, [1, 0.1, 0.00625, 0.00025], 0, 1e-7);
    expect(yarn.attentionScaling).toBeCloseTo(0.1 * Math.log(4) + 1, 12); // 1.138629…
    // truncate false keeps the fractional bounds: ramp(2) = (2 − 1.0080) / (2.5132 − 1.0080) = 0.65907
    const smooth = ropeFrequencies({
      ...base,
      ropeScaling: { rope_type: "yarn", factor: 4, truncate: false },
    });
    expectClose(smooth.invFreq, [1, 0.1, 0.00505697, 0.00025], 0, 1e-6);
    // mscale / mscale_all_dim (DeepSeek): (0.1·2·ln 4 + 1) / (0.1·1·ln 4 + 1) = 1.121751
    const ratio = ropeFrequencies({
      ...base,
      ropeScaling: { rope_type: "yarn", factor: 4, mscale: 2, mscale_all_dim: 1 },
    });
    expect(ratio.attentionScaling).toBeCloseTo(1.121751, 6);
    const explicit = ropeFrequencies({
      ...base,
      ropeScaling: { rope_type: "yarn", factor: 4, attention_factor: 0.7 },
    });
    expect(explicit.attentionScaling).toBe(0.7);
    // No factor: max_position_embeddings / original_max_position_embeddings = 2048 / 512 = 4.
    const derived = ropeFrequencies({
      ...base,
      ropeScaling: { rope_type: "yarn", original_max_position_embeddings: 512 },
    });
    expect(derived.attentionScaling).toBeCloseTo(0.1 * Math.log(4) + 1, 12);
  });

  it("llama3 keeps high frequencies, divides low ones by the factor and blends the middle", () => {
    // dim 8: base frequencies [1, 0.1, 0.01, 0.001], wavelengths 2π/f = [6.3, 62.8, 628.3, 6283];
    // old context 1000 → high band < 250, low band > 1000. Middle (628.3):
    // s = (1000 / 628.3 − 1) / (4 − 1) = 0.197183, f = (1 − s)·0.01/8 + s·0.01 = 0.00297535.
    const llama3 = ropeFrequencies({
      ...base,
      ropeScaling: {
        rope_type: "llama3",
        factor: 8,
        low_freq_factor: 1,
        high_freq_factor: 4,
        original_max_position_embeddings: 1000,
      },
    });
    expectClose(llama3.invFreq, [1, 0.1, 0.00297535, 0.000125], 0, 1e-6);
    expect(llama3.attentionScaling).toBe(1);
  });

  it("refuses unsupported types and missing fields with a RangeError", () => {
    expect(() => ropeFrequencies({ ...base, ropeScaling: { rope_type: "longrope" } })).toThrow(
      /ropeFrequencies: rope_type "longrope" is not supported/,
    );
    expect(() => ropeFrequencies({ ...base, ropeScaling: { rope_type: "linear" } })).toThrow(
      new RangeError("ropeFrequencies: rope_scaling.factor must be a finite number > 0, got undefined"),
    );
    expect(() => ropeFrequencies({ ...base, ropeScaling: { rope_type: "llama3", factor: 8 } })).toThrow(
      /ropeFrequencies: rope_scaling.low_freq_factor/,
    );
    expect(() => ropeFrequencies({ ...base, ropeTheta: Number.NaN })).toThrow(/ropeFrequencies: rope_theta/);
  });

  it("reads a parsed config.json as it stands: head_dim from hidden_size / heads, rope_scaling as written", () => {
    const config = parseModelConfig({
      architectures: ["LlamaForCausalLM"],
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 1,
      num_attention_heads: 8,
      vocab_size: 16,
      rms_norm_eps: 1e-6,
      max_position_embeddings: 64,
      rope_scaling: { type: "linear", factor: 2 },
    });
    expectClose(ropeFrequencies(config).invFreq, [0.5, 0.005], 0, 1e-7);
  });
});
