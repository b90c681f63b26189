// Hugging Face `config.json` → ModelConfig for the Llama family (Llama, Qwen2).
// Only the keys the engine needs are read; anything that would make the engine
// compute a different function from the checkpoint (another activation, sliding
// windows, MLP biases) is rejected instead of silently ignored.
//
// A vision-language model is the same text config plus two keys (names after
// Qwen2-VL / LLaVA):
//   "vision_config": { "image_size": S, "patch_size": P, "num_channels": 3 }
//   "image_token_id": <id>   the placeholder token at image positions
// Its vision part is a learned patch projection (see weights.ts and nn/vision.ts);
// transformers loads such a directory as the text model and ignores the rest.
import { join } from "node:path";
import { z } from "zod";
import { describeValue, parseWithSchema, readJsonFile } from "./files.ts";

export type Architecture = "llama" | "qwen2";

/** HF class name in `architectures[0]` → the engine's architecture. */
export const SUPPORTED_ARCHITECTURES: Readonly<Record<string, Architecture>> = {
  LlamaForCausalLM: "llama",
  Qwen2ForCausalLM: "qwen2",
};

/** The raw `rope_scaling` object (e.g. llama3, linear, yarn); the RoPE code interprets it. */
export interface RopeScaling {
  rope_type?: string;
  type?: string;
  [key: string]: unknown;
}

/** The image input of a vision-language model: S×S RGB images in P×P patches. */
export interface VisionConfig {
  /** S: images must be exactly S×S pixels. */
  imageSize: number;
  /** P: patch side; divides S. */
  patchSize: number;
  /** C: colour channels of a patch (3, RGB). */
  numChannels: number;
  /** The placeholder token held by image positions (its embedding is replaced). */
  imageTokenId: number;
}

/** numPatches = (S/P)² soft tokens per image; patchDim = C·P·P values per patch. */
export function visionDims(v: VisionConfig): { numPatches: number; patchDim: number } {
  const side = v.imageSize / v.patchSize;
  return { numPatches: side * side, patchDim: v.numChannels * v.patchSize * v.patchSize };
}

export interface ModelConfig {
  architecture: Architecture;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  rmsNormEps: number;
  ropeTheta: number;
  ropeScaling: RopeScaling | null;
  maxPositionEmbeddings: number;
  tieWordEmbeddings: boolean;
  /** q/k/v projections carry a bias (always for Qwen2). */
  attentionBias: boolean;
  bosTokenId: number | null;
  eosTokenIds: number[];
  /** The checkpoint's own dtype ("bfloat16", …); weights are float32 in memory regardless. */
  torchDtype: string;
  /** Present for a vision-language model (image chunks in prompts); absent for text-only. */
  vision?: VisionConfig;
}

// HF's LlamaConfig / Qwen2Config default when the key is absent.
const DEFAULT_ROPE_THETA = 10_000;

const positiveInt = z.number().int().positive();
const tokenId = z.number().int().nonnegative();

const ArchitecturesSchema = z.object({ architectures: z.array(z.string()).min(1) });

const RopeScalingSchema = z
  .looseObject({ rope_type: z.string().optional(), type: z.string().optional() })
  .refine((value) => value.rope_type !== undefined || value.type !== undefined, {
    error: "needs a rope_type (or type) string",
  });

const VisionConfigSchema = z.object({
  image_size: positiveInt,
  patch_size: positiveInt,
  // Images are decoded to RGB, so a patch has exactly three channels.
  num_channels: z.literal(3, { error: "only 3 (RGB) is supported" }).optional(),
});

const HfConfigSchema = z.object({
  hidden_size: positiveInt,
  intermediate_size: positiveInt,
  num_hidden_layers: positiveInt,
  num_attention_heads: positiveInt,
  num_key_value_heads: positiveInt.nullish(),
  head_dim: positiveInt.nullish(),
  vocab_size: positiveInt,
  rms_norm_eps: z.number().positive(),
  rope_theta: z.number().positive().optional(),
  rope_scaling: RopeScalingSchema.nullish(),
  max_position_embeddings: positiveInt,
  tie_word_embeddings: z.boolean().optional(),
  attention_bias: z.boolean().optional(),
  mlp_bias: z.literal(false, { error: "true is not supported (MLP biases)" }).optional(),
  hidden_act: z.literal("silu", { error: 'only "silu" (SwiGLU) is supported' }).optional(),
  use_sliding_window: z
    .literal(false, { error: "true is not supported (sliding-window attention)" })
    .optional(),
  bos_token_id: tokenId.nullish(),
  eos_token_id: z.union([tokenId, z.array(tokenId)]).nullish(),
  torch_dtype: z.string().nullish(),
  // transformers ≥ 4.56 writes `dtype` instead of `torch_dtype`.
  dtype: z.string().nullish(),
  vision_config: VisionConfigSchema.nullish(),
  image_token_id: tokenId.nullish(),
});
type HfConfig = z.output<typeof HfConfigSchema>;

function parseArchitecture(json: unknown, source: string): Architecture {
  const { architectures } = parseWithSchema(ArchitecturesSchema, json, source);
  const name = architectures[0] ?? "";
  const architecture = SUPPORTED_ARCHITECTURES[name];
  if (architecture !== undefined) return architecture;
  const supported = Object.keys(SUPPORTED_ARCHITECTURES).join(", ");
  throw new Error(
    `${source}: architectures[0] ${describeValue(name)} is not supported (supported: ${supported})`,
  );
}

/** Checks between keys that a schema of single keys cannot express. */
function checkConsistency(raw: HfConfig, config: ModelConfig, source: string): void {
  const fail = (key: string, why: string) => {
    throw new Error(`${source}: ${key} ${why}`);
  };
  if (raw.head_dim == null && raw.hidden_size % raw.num_attention_heads !== 0) {
    fail(
      "hidden_size",
      `${raw.hidden_size} is not divisible by num_attention_heads ${raw.num_attention_heads}`,
    );
  }
  if (config.numHeads % config.numKvHeads !== 0) {
    fail(
      "num_key_value_heads",
      `${config.numKvHeads} does not divide num_attention_heads ${config.numHeads}`,
    );
  }
  if (config.bosTokenId !== null && config.bosTokenId >= config.vocabSize) {
    fail("bos_token_id", `${config.bosTokenId} is outside vocab_size ${config.vocabSize}`);
  }
  const badEos = config.eosTokenIds.find((id) => id >= config.vocabSize);
  if (badEos !== undefined) fail("eos_token_id", `${badEos} is outside vocab_size ${config.vocabSize}`);
  if ((raw.vision_config == null) !== (raw.image_token_id == null)) {
    fail(
      raw.vision_config == null ? "image_token_id" : "vision_config",
      "is given without the other: a vision-language model needs both vision_config and image_token_id",
    );
  }
  const vision = config.vision;
  if (vision) {
    if (vision.imageSize % vision.patchSize !== 0) {
      fail(
        "vision_config.image_size",
        `${vision.imageSize} is not divisible by vision_config.patch_size ${vision.patchSize}`,
      );
    }
    if (vision.imageTokenId >= config.vocabSize) {
      fail("image_token_id", `${vision.imageTokenId} is outside vocab_size ${config.vocabSize}`);
    }
  }
}

function visionOf(raw: HfConfig): VisionConfig | undefined {
  if (raw.vision_config == null || raw.image_token_id == null) return undefined;
  return {
    imageSize: raw.vision_config.image_size,
    patchSize: raw.vision_config.patch_size,
    numChannels: raw.vision_config.num_channels ?? 3,
    imageTokenId: raw.image_token_id,
  };
}

/**
 * Parses the contents of a `config.json`. `source` names the file in errors.
 * Errors name the file and the key, e.g. `…/config.json: hidden_size: is missing`.
 */
export function parseModelConfig(json: unknown, source = "config.json"): ModelConfig {
  const architecture = parseArchitecture(json, source);
  const raw = parseWithSchema(HfConfigSchema, json, source);
  const numHeads = raw.num_attention_heads;
  const eos = raw.eos_token_id;
  const config: ModelConfig = {
    architecture,
    hiddenSize: raw.hidden_size,
    intermediateSize: raw.intermediate_size,
    numLayers: raw.num_hidden_layers,
    numHeads,
    numKvHeads: raw.num_key_value_heads ?? numHeads,
    headDim: raw.head_dim ?? raw.hidden_size / numHeads,
    vocabSize: raw.vocab_size,
    rmsNormEps: raw.rms_norm_eps,
    ropeTheta: raw.rope_theta ?? DEFAULT_ROPE_THETA,
    ropeScaling: raw.rope_scaling ?? null,
    maxPositionEmbeddings: raw.max_position_embeddings,
    tieWordEmbeddings: raw.tie_word_embeddings ?? false,
    attentionBias: architecture === "qwen2" || raw.attention_bias === true,
    bosTokenId: raw.bos_token_id ?? null,
    eosTokenIds: eos == null ? [] : Array.isArray(eos) ? eos : [eos],
    torchDtype: raw.torch_dtype ?? raw.dtype ?? "float32",
  };
  const vision = visionOf(raw);
  if (vision) config.vision = vision;
  checkConsistency(raw, config, source);
  return config;
}

/** Reads `<dir>/config.json`. */
export async function loadModelConfig(dir: string): Promise<ModelConfig> {
  const path = join(dir, "config.json");
  return parseModelConfig(await readJsonFile(path, "a Hugging Face config.json"), path);
}

/** The inverse of parseModelConfig: a `config.json` object that transformers loads. */
export function modelConfigToJson(config: ModelConfig): Record<string, unknown> {
  const className = Object.keys(SUPPORTED_ARCHITECTURES).find(
    (name) => SUPPORTED_ARCHITECTURES[name] === config.architecture,
  );
  const eos = config.eosTokenIds;
  return {
    architectures: [className],
    model_type: config.architecture,
    hidden_act: "silu",
    hidden_size: config.hiddenSize,
    intermediate_size: config.intermediateSize,
    num_hidden_layers: config.numLayers,
    num_attention_heads: config.numHeads,
    num_key_value_heads: config.numKvHeads,
    head_dim: config.headDim,
    vocab_size: config.vocabSize,
    rms_norm_eps: config.rmsNormEps,
    rope_theta: config.ropeTheta,
    rope_scaling: config.ropeScaling,
    max_position_embeddings: config.maxPositionEmbeddings,
    tie_word_embeddings: config.tieWordEmbeddings,
    // Qwen2 has q/k/v biases by construction and no such key.
    ...(config.architecture === "llama" ? { attention_bias: config.attentionBias, mlp_bias: false } : {}),
    ...(config.architecture === "qwen2" ? { use_sliding_window: false } : {}),
    bos_token_id: config.bosTokenId,
    eos_token_id: eos.length === 1 ? eos[0] : eos,
    torch_dtype: config.torchDtype,
    ...(config.vision
      ? {
          vision_config: {
            image_size: config.vision.imageSize,
            patch_size: config.vision.patchSize,
            num_channels: config.vision.numChannels,
          },
          image_token_id: config.vision.imageTokenId,
        }
      : {}),
  };
}
