import { loadNative } from "../loader.ts";

/** The native functions of src/cpu/elementwise_binding.cc (shapes in each wrapper's comment). */
export interface ElementwiseBinding {
  rmsNorm(
    x: Float32Array,
    weight: Float32Array,
    out: Float32Array,
    invRms: Float32Array | null,
    n: number,
    d: number,
    eps: number,
  ): void;
  rmsNormBackward(
    dOut: Float32Array,
    x: Float32Array,
    weight: Float32Array,
    invRms: Float32Array | null,
    dx: Float32Array,
    dWeight: Float32Array | null,
    n: number,
    d: number,
    eps: number,
    accumulate: boolean,
  ): void;
  rope(
    x: Float32Array,
    positions: Int32Array,
    invFreq: Float32Array,
    n: number,
    heads: number,
    headDim: number,
    attentionScaling: number,
    inverse: boolean,
  ): void;
  swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void;
  swigluBackward(
    dOut: Float32Array,
    gate: Float32Array,
    up: Float32Array,
    dGate: Float32Array,
    dUp: Float32Array,
  ): void;
  embedding(
    ids: Int32Array,
    table: Float32Array,
    out: Float32Array,
    n: number,
    vocab: number,
    d: number,
  ): void;
  embeddingBackward(
    ids: Int32Array,
    dOut: Float32Array,
    dTable: Float32Array,
    n: number,
    vocab: number,
    d: number,
  ): void;
}

// ---- RMSNorm ----------------------------------------------------------------

/**
 * RMSNorm (Llama, Qwen2): out[n, d] = x · rsqrt(mean_j x[i, j]² + eps) · weight[d].
 * When invRms [n] is given it receives rsqrt(mean(x²) + eps) per row, which
 * rmsNormBackward can reuse instead of recomputing it. eps must be > 0.
 */
export function rmsNorm(
  x: Float32Array,
  weight: Float32Array,
  out: Float32Array,
  invRms: Float32Array | null,
  n: number,
  d: number,
  eps: number,
): void {
  loadNative().rmsNorm(x, weight, out, invRms, n, d, eps);
}

/**
 * RMSNorm's backward for L = Σ dOut ⊙ rmsNorm(x):
 * - dx [n, d] is overwritten, or added to when `accumulate` (e.g. onto the
 *   residual stream's gradient);
 * - dWeight [d] is always accumulated (+=), so it sums over calls; null skips it.
 * invRms [n] from the forward, or null to recompute it from x and eps. dx must
 * not share memory with dOut or x.
 */
export function rmsNormBackward(
  dOut: Float32Array,
  x: Float32Array,
  weight: Float32Array,
  invRms: Float32Array | null,
  dx: Float32Array,
  dWeight: Float32Array | null,
  n: number,
  d: number,
  eps: number,
  accumulate = false,
): void {
  loadNative().rmsNormBackward(dOut, x, weight, invRms, dx, dWeight, n, d, eps, accumulate);
}

// ---- RoPE -------------------------------------------------------------------

/** What the rope kernels need: HF's `inv_freq` and `attention_scaling`. */
export interface RopeFrequencies {
  /** [rotaryDim / 2]: θ_k = position · invFreq[k]. */
  invFreq: Float32Array;
  /** Multiplies cos and sin (1 except for yarn and longrope). */
  attentionScaling: number;
}

/**
 * Rotary position embedding in Hugging Face's rotate_half layout, in place on
 * x [n, heads, headDim] (q or k rows; row i at position positions[i] ≥ 0):
 *   x[k]        ← x[k]·c − x[k + r]·s
 *   x[k + r]    ← x[k + r]·c + x[k]·s,   c = a·cos θ_k, s = a·sin θ_k, k < r
 * with r = invFreq.length ≤ headDim / 2 and a = attentionScaling. Dimensions from
 * 2r on pass through unchanged (partial_rotary_factor < 1). Angles are computed in
 * float64 (transformers multiplies in fp32), so large positions stay exact.
 */
export function rope(
  x: Float32Array,
  positions: Int32Array,
  freqs: RopeFrequencies,
  n: number,
  heads: number,
  headDim: number,
): void {
  loadNative().rope(x, positions, freqs.invFreq, n, heads, headDim, freqs.attentionScaling, false);
}

/**
 * The backward of `rope`: rotates the gradient by −θ with the same scaling (the
 * transpose of the forward map), in place on dx [n, heads, headDim]. With
 * attentionScaling 1 this is also the forward's inverse.
 */
export function ropeBackward(
  dx: Float32Array,
  positions: Int32Array,
  freqs: RopeFrequencies,
  n: number,
  heads: number,
  headDim: number,
): void {
  loadNative().rope(dx, positions, freqs.invFreq, n, heads, headDim, freqs.attentionScaling, true);
}

/** `rope_scaling` (transformers 4.x) or `rope_parameters` (5.x) of a config.json. */
export interface RopeScalingConfig {
  rope_type?: string;
  /** The pre-4.43 name of rope_type. */
  type?: string;
  rope_theta?: number;
  partial_rotary_factor?: number;
  factor?: number;
  original_max_position_embeddings?: number;
  // yarn
  attention_factor?: number;
  beta_fast?: number;
  beta_slow?: number;
  mscale?: number;
  mscale_all_dim?: number;
  truncate?: boolean;
  // llama3
  low_freq_factor?: number;
  high_freq_factor?: number;
}

/** The fields of a Hugging Face config.json that decide the rotary frequencies. */
export interface RopeConfig {
  hidden_size: number;
  num_attention_heads: number;
  head_dim?: number | null;
  max_position_embeddings: number;
  /** 10000 when absent, as in LlamaConfig and Qwen2Config. */
  rope_theta?: number;
  partial_rotary_factor?: number;
  rope_scaling?: RopeScalingConfig | null;
  rope_parameters?: RopeScalingConfig | null;
}

const ROPE_TYPES = ["default", "linear", "dynamic", "yarn", "llama3"] as const;

/**
 * Hugging Face's `inv_freq` and `attention_scaling` for a model config, following
 * transformers' modeling_rope_utils (`rope_theta` plus rope_scaling types
 * "default", "linear", "dynamic", "yarn", "llama3"):
 * - dim = int(head_dim · partial_rotary_factor), inv_freq[k] = θ^(−2k/dim);
 * - linear: inv_freq / factor;
 * - dynamic (NTK): θ' = θ · (factor · L / max_pos − (factor − 1))^(dim / (dim − 2)) with
 *   L = max(seqLen, max_position_embeddings); seqLen is what transformers passes
 *   (the largest position + 1; it keeps the largest L it has seen above max_pos);
 * - yarn: a ramp between interpolated (/ factor) and extrapolated frequencies over
 *   the dimensions whose rotations at original_max_position_embeddings fall between
 *   beta_slow and beta_fast, and attention_scaling = 0.1 · ln(factor) + 1 (or
 *   attention_factor, or the mscale / mscale_all_dim ratio); factor falls back to
 *   max_position_embeddings / original_max_position_embeddings;
 * - llama3: low frequencies / factor, high ones kept, a smooth blend between.
 * Values are computed in float64 and rounded once to fp32 (transformers computes
 * in fp32; they agree within an ulp or two). Throws a RangeError for other types
 * (e.g. "longrope") and for missing or invalid fields.
 */
export function ropeInvFreq(config: RopeConfig, seqLen?: number): RopeFrequencies {
  const fail = (what: string): never => {
    throw new RangeError(`ropeInvFreq: ${what}`);
  };
  const scaling = config.rope_parameters ?? config.rope_scaling ?? {};
  const ropeType = scaling.rope_type ?? scaling.type ?? "default";
  if (!(ROPE_TYPES as readonly string[]).includes(ropeType)) {
    fail(`rope_type "${ropeType}" is not supported (supported: ${ROPE_TYPES.join(", ")})`);
  }
  const positive = (name: string, value: number | undefined | null): number => {
    if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
      fail(`${name} must be a finite number > 0, got ${value}`);
    }
    return value as number;
  };
  const base = positive("rope_theta", scaling.rope_theta ?? config.rope_theta ?? 10000);
  const headDim =
    config.head_dim ??
    Math.floor(
      positive("hidden_size", config.hidden_size) /
        positive("num_attention_heads", config.num_attention_heads),
    );
  const partial = positive(
    "partial_rotary_factor",
    scaling.partial_rotary_factor ?? config.partial_rotary_factor ?? 1,
  );
  const dim = Math.trunc(headDim * partial);
  if (!Number.isInteger(headDim) || dim < 2 || dim % 2 !== 0 || dim > headDim) {
    fail(
      `the rotary dimension int(head_dim · partial_rotary_factor) = ${dim} must be even, ≥ 2 and ≤ head_dim ${headDim}`,
    );
  }
  const maxPositions = positive("max_position_embeddings", config.max_position_embeddings);
  const half = dim / 2;
  /** θ^(2k/dim) for k < dim / 2. */
  const powers = (theta: number) => Float64Array.from({ length: half }, (_, k) => theta ** ((2 * k) / dim));

  let inv: Float64Array;
  let attentionScaling = 1;
  switch (ropeType) {
    case "linear": {
      const factor = positive("rope_scaling.factor", scaling.factor);
      inv = powers(base).map((p) => 1 / (p * factor));
      break;
    }
    case "dynamic": {
      const factor = positive("rope_scaling.factor", scaling.factor);
      if (seqLen !== undefined) positive("seqLen", seqLen);
      const length = Math.max(seqLen ?? maxPositions, maxPositions);
      const scaledBase = base * ((factor * length) / maxPositions - (factor - 1)) ** (dim / (dim - 2));
      inv = powers(scaledBase).map((p) => 1 / p);
      break;
    }
    case "yarn": {
      const original = positive(
        "rope_scaling.original_max_position_embeddings",
        scaling.original_max_position_embeddings ?? maxPositions,
      );
      const factor = positive("rope_scaling.factor", scaling.factor ?? maxPositions / original);
      const mscale = (scale: number, m = 1) => (scale <= 1 ? 1 : 0.1 * m * Math.log(scale) + 1);
      if (scaling.attention_factor != null) {
        attentionScaling = positive("rope_scaling.attention_factor", scaling.attention_factor);
      } else if (scaling.mscale && scaling.mscale_all_dim) {
        attentionScaling = mscale(factor, scaling.mscale) / mscale(factor, scaling.mscale_all_dim);
      } else {
        attentionScaling = mscale(factor);
      }
      const betaFast = scaling.beta_fast || 32;
      const betaSlow = scaling.beta_slow || 1;
      // The dimension whose wavelength makes `rotations` turns over the original context.
      const correctionDim = (rotations: number) =>
        (dim * Math.log(original / (rotations * 2 * Math.PI))) / (2 * Math.log(base));
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
      const pos = powers(base);
      inv = pos.map((p, k) => {
        const ramp = Math.min(1, Math.max(0, (k - low) / (high - low)));
        const extrapolation = 1 - ramp; // weight of the unscaled frequency
        return (1 / (factor * p)) * (1 - extrapolation) + (1 / p) * extrapolation;
      });
      break;
    }
    case "llama3": {
      const factor = positive("rope_scaling.factor", scaling.factor);
      const lowFactor = positive("rope_scaling.low_freq_factor", scaling.low_freq_factor);
      const highFactor = positive("rope_scaling.high_freq_factor", scaling.high_freq_factor);
      const oldContext = positive(
        "rope_scaling.original_max_position_embeddings",
        scaling.original_max_position_embeddings,
      );
      if (!(highFactor > lowFactor)) fail("rope_scaling.high_freq_factor must be > low_freq_factor");
      const lowWavelength = oldContext / lowFactor;
      const highWavelength = oldContext / highFactor;
      inv = powers(base).map((p) => {
        const f = 1 / p;
        const wavelength = 2 * Math.PI * p;
        if (wavelength < highWavelength) return f;
        if (wavelength > lowWavelength) return f / factor;
        const smooth = (oldContext / wavelength - lowFactor) / (highFactor - lowFactor);
        return ((1 - smooth) * f) / factor + smooth * f;
      });
      break;
    }
    default:
      inv = powers(base).map((p) => 1 / p);
  }
  return { invFreq: Float32Array.from(inv), attentionScaling };
}

// ---- SwiGLU -----------------------------------------------------------------

/** The Llama MLP gate: out = silu(gate) · up elementwise, silu(g) = g · σ(g); all [n, f]. */
export function swiglu(gate: Float32Array, up: Float32Array, out: Float32Array): void {
  loadNative().swiglu(gate, up, out);
}

/**
 * SwiGLU's backward: dGate = dOut · up · σ(g)(1 + g(1 − σ(g))), dUp = dOut · silu(g),
 * both overwritten; all [n, f].
 */
export function swigluBackward(
  dOut: Float32Array,
  gate: Float32Array,
  up: Float32Array,
  dGate: Float32Array,
  dUp: Float32Array,
): void {
  loadNative().swigluBackward(dOut, gate, up, dGate, dUp);
}

// ---- Embedding --------------------------------------------------------------

/** out[n, d] = table[ids[i], :] for table [vocab, d]; every id must be in [0, vocab). */
export function embedding(
  ids: Int32Array,
  table: Float32Array,
  out: Float32Array,
  n: number,
  vocab: number,
  d: number,
): void {
  loadNative().embedding(ids, table, out, n, vocab, d);
}

/**
 * The embedding's backward: dTable[ids[i], :] += dOut[i, :] (accumulated). Repeated
 * ids add up without races, in row order, so the result is deterministic.
 */
export function embeddingBackward(
  ids: Int32Array,
  dOut: Float32Array,
  dTable: Float32Array,
  n: number,
  vocab: number,
  d: number,
): void {
  loadNative().embeddingBackward(ids, dOut, dTable, n, vocab, d);
}
