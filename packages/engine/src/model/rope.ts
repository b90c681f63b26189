// The rotary frequencies of a model, from its config: what transformers'
// modeling_rope_utils computes as `inv_freq` and `attention_scaling`. The kernels
// take the result only; how a checkpoint scales RoPE is the model's business.
import type { RopeFrequencies } from "@opentinker/kernels";
import type { ModelConfig, RopeScaling } from "./config.ts";

/** The fields of a config that decide the frequencies. */
export type RopeSettings = Pick<
  ModelConfig,
  "headDim" | "maxPositionEmbeddings" | "ropeTheta" | "ropeScaling"
>;

const ROPE_TYPES = ["default", "linear", "dynamic", "yarn", "llama3"] as const;
type RopeType = (typeof ROPE_TYPES)[number];

const fail = (what: string): never => {
  throw new RangeError(`ropeFrequencies: ${what}`);
};

const positive = (name: string, value: unknown): number => {
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    fail(`${name} must be a finite number > 0, got ${value}`);
  }
  return value as number;
};

/** A rope_scaling number by key, checked > 0 when present (or when it has no fallback). */
const scalingNumber = (scaling: RopeScaling, key: string, fallback?: number): number =>
  positive(`rope_scaling.${key}`, scaling[key] ?? fallback);

/** What each scaling type needs: the rotary dimension, θ, the context and its rope_scaling object. */
interface RopeInput {
  dim: number;
  theta: number;
  maxPositions: number;
  scaling: RopeScaling;
  seqLen?: number;
}

/** θ^(2k/dim) for k < dim / 2: the wavelengths / 2π of the unscaled frequencies. */
const powers = (theta: number, dim: number) =>
  Float64Array.from({ length: dim / 2 }, (_, k) => theta ** ((2 * k) / dim));

type Scaled = { inv: Float64Array; attentionScaling?: number };

const SCALINGS: Record<RopeType, (input: RopeInput) => Scaled> = {
  default: ({ theta, dim }) => ({ inv: powers(theta, dim).map((p) => 1 / p) }),
  linear: ({ theta, dim, scaling }) => {
    const factor = scalingNumber(scaling, "factor");
    return { inv: powers(theta, dim).map((p) => 1 / (p * factor)) };
  },
  dynamic: ({ theta, dim, scaling, maxPositions, seqLen }) => {
    const factor = scalingNumber(scaling, "factor");
    if (seqLen !== undefined) positive("seqLen", seqLen);
    const length = Math.max(seqLen ?? maxPositions, maxPositions);
    const scaledTheta = theta * ((factor * length) / maxPositions - (factor - 1)) ** (dim / (dim - 2));
    return { inv: powers(scaledTheta, dim).map((p) => 1 / p) };
  },
  yarn: yarnFrequencies,
  llama3: ({ theta, dim, scaling }) => {
    const factor = scalingNumber(scaling, "factor");
    const lowFactor = scalingNumber(scaling, "low_freq_factor");
    const highFactor = scalingNumber(scaling, "high_freq_factor");
    const oldContext = scalingNumber(scaling, "original_max_position_embeddings");
    if (!(highFactor > lowFactor)) fail("rope_scaling.high_freq_factor must be > low_freq_factor");
    const lowWavelength = oldContext / lowFactor;
    const highWavelength = oldContext / highFactor;
    const inv = powers(theta, dim).map((p) => {
      const f = 1 / p;
      const wavelength = 2 * Math.PI * p;
      if (wavelength < highWavelength) return f;
      if (wavelength > lowWavelength) return f / factor;
      const smooth = (oldContext / wavelength - lowFactor) / (highFactor - lowFactor);
      return ((1 - smooth) * f) / factor + smooth * f;
    });
    return { inv };
  },
};

/** YaRN's attention scaling: attention_factor, else the mscale / mscale_all_dim ratio, else 0.1 · ln(factor) + 1. */
function yarnAttentionScaling(scaling: RopeScaling, factor: number): number {
  const mscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
  if (scaling.attention_factor != null) return scalingNumber(scaling, "attention_factor");
  const { mscale: m, mscale_all_dim: mAll } = scaling;
  if (typeof m === "number" && m && typeof mAll === "number" && mAll) {
    return mscale(factor, m) / mscale(factor, mAll);
  }
  return mscale(factor);
}

/**
 * YaRN: a ramp between interpolated (/ factor) and extrapolated frequencies over
 * the dimensions whose rotations at original_max_position_embeddings fall between
 * beta_slow and beta_fast; factor falls back to max_position_embeddings /
 * original_max_position_embeddings.
 */
function yarnFrequencies({ theta, dim, scaling, maxPositions }: RopeInput): Scaled {
  const original = scalingNumber(scaling, "original_max_position_embeddings", maxPositions);
  const factor = scalingNumber(scaling, "factor", maxPositions / original);
  const betaFast = (scaling.beta_fast as number) || 32;
  const betaSlow = (scaling.beta_slow as number) || 1;
  // The dimension whose wavelength makes `rotations` turns over the original context.
  const correctionDim = (rotations: number) =>
    (dim * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(theta));
  const truncate = scaling.truncate ?? true;
  let low = correctionDim(betaFast);
  let high = correctionDim(betaSlow);
  if (truncate) {
    low = Math.floor(low);
    high = Math.ceil(high);
  }
  low = Math.max(low, 0);
  high = Math.min(high, dim - 1);
  if (low === high) high += 0.001;
  const inv = powers(theta, dim).map((p, k) => {
    const ramp = Math.min(1, Math.max(0, (k - low) / (high - low)));
    const extrapolation = 1 - ramp; // weight of the unscaled frequency
    return (1 / (factor * p)) * (1 - extrapolation) + (1 / p) * extrapolation;
  });
  return { inv, attentionScaling: yarnAttentionScaling(scaling, factor) };
}

/**
 * The model's `inv_freq` and `attention_scaling`, following transformers
 * (`rope_theta` plus the rope_scaling types "default", "linear", "dynamic",
 * "yarn", "llama3"; rope_scaling may also carry rope_theta and
 * partial_rotary_factor, as transformers 5's rope_parameters do):
 * - dim = int(head_dim · partial_rotary_factor), inv_freq[k] = θ^(−2k/dim);
 * - linear: inv_freq / factor;
 * - dynamic (NTK): θ' = θ · (factor · L / max_pos − (factor − 1))^(dim / (dim − 2)) with
 *   L = max(seqLen, max_position_embeddings); seqLen is what transformers passes
 *   (the largest position + 1; it keeps the largest L it has seen above max_pos);
 * - yarn: see yarnFrequencies; attention_scaling from yarnAttentionScaling;
 * - llama3: low frequencies / factor, high ones kept, a smooth blend between.
 * Values are computed in float64 and rounded once to fp32 (transformers computes
 * in fp32; they agree within an ulp or two). Throws a RangeError for other types
 * (e.g. "longrope") and for missing or invalid fields.
 */
export function ropeFrequencies(config: RopeSettings, seqLen?: number): RopeFrequencies {
  const scaling: RopeScaling = config.ropeScaling ?? {};
  const ropeType = scaling.rope_type ?? scaling.type ?? "default";
  if (!(ROPE_TYPES as readonly string[]).includes(ropeType)) {
    fail(`rope_type "${ropeType}" is not supported (supported: ${ROPE_TYPES.join(", ")})`);
  }
  const theta = positive("rope_theta", scaling.rope_theta ?? config.ropeTheta);
  const headDim = config.headDim;
  const partial = positive("partial_rotary_factor", scaling.partial_rotary_factor ?? 1);
  const dim = Math.trunc(headDim * partial);
  if (!Number.isInteger(headDim) || dim < 2 || dim % 2 !== 0 || dim > headDim) {
    fail(
      `the rotary dimension int(head_dim · partial_rotary_factor) = ${dim} must be even, ≥ 2 and ≤ head_dim ${headDim}`,
    );
  }
  const maxPositions = positive("max_position_embeddings", config.maxPositionEmbeddings);
  const input = { dim, theta, maxPositions, scaling, seqLen };
  const { inv, attentionScaling = 1 } = SCALINGS[ropeType as RopeType](input);
  return { invFreq: Float32Array.from(inv), attentionScaling };
}
