// Our Llama / Qwen2 models as GGUF files that llama.cpp loads (f32, or bf16
// matrices when the model holds them in bf16), so the
// sampler benchmark can run llama.cpp on exactly the same weights. The mapping
// follows llama.cpp's convert_hf_to_gguf.py (LlamaModel, Qwen2Model):
// - tensor names: token_embd, blk.N.attn_{norm,q,k,v,output}, blk.N.ffn_{norm,gate,up,down},
//   output_norm, output (absent when the embeddings are tied: llama.cpp reuses token_embd);
// - `llama` q/k rows are permuted (see permuteRotaryRows); `qwen2` ones are not.
// The tokenizer is synthetic: the benchmark feeds token ids, never text.
import { basename } from "node:path";
import {
  floatsToBf16,
  loadModelConfig,
  loadModelWeights,
  type ModelConfig,
  type ModelWeights,
  type WeightDtype,
} from "../src/model/index.ts";
import { modelWeightTensors } from "../src/model/weights.ts";
import { byteToUnicode } from "../src/testing/tiny-tokenizer.ts";
import { type GgufFile, type GgufTensor, type GgufValue, gguf, writeGguf } from "./gguf.ts";

/** llama_ftype LLAMA_FTYPE_ALL_F32 and LLAMA_FTYPE_MOSTLY_BF16 (matrices bf16, norms and biases f32). */
const FILE_TYPE_ALL_F32 = 0;
const FILE_TYPE_MOSTLY_BF16 = 32;
/** llama_token_type NORMAL. */
const TOKEN_TYPE_NORMAL = 1;

/** HF module name inside a decoder layer → llama.cpp's. */
const LAYER_NAMES: Readonly<Record<string, string>> = {
  "input_layernorm.weight": "attn_norm.weight",
  "self_attn.q_proj.weight": "attn_q.weight",
  "self_attn.q_proj.bias": "attn_q.bias",
  "self_attn.k_proj.weight": "attn_k.weight",
  "self_attn.k_proj.bias": "attn_k.bias",
  "self_attn.v_proj.weight": "attn_v.weight",
  "self_attn.v_proj.bias": "attn_v.bias",
  "self_attn.o_proj.weight": "attn_output.weight",
  "post_attention_layernorm.weight": "ffn_norm.weight",
  "mlp.gate_proj.weight": "ffn_gate.weight",
  "mlp.up_proj.weight": "ffn_up.weight",
  "mlp.down_proj.weight": "ffn_down.weight",
};

const GLOBAL_NAMES: Readonly<Record<string, string>> = {
  "model.embed_tokens.weight": "token_embd.weight",
  "model.norm.weight": "output_norm.weight",
  "lm_head.weight": "output.weight",
};

/** llama.cpp's name for a Hugging Face tensor name. */
export function ggufTensorName(hfName: string): string {
  const global = GLOBAL_NAMES[hfName];
  if (global) return global;
  const match = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  const inLayer = match && LAYER_NAMES[match[2] as string];
  if (!match || !inLayer) throw new Error(`gguf: no llama.cpp name for tensor ${hfName}`);
  return `blk.${match[1]}.${inLayer}`;
}

/**
 * HF Llama checkpoints rotate each head's pairs (i, i + headDim/2) ("rotate
 * half"); llama.cpp's `llama` architecture rotates adjacent pairs (2i, 2i + 1).
 * The converter therefore interleaves the two halves of every head's rows:
 * new row h·hd + 2i + j = old row h·hd + j·hd/2 + i (j ∈ {0, 1}), i.e.
 * `w.reshape(heads, 2, hd/2, cols).swapaxes(1, 2)`. q and k get the same
 * permutation within each head, so q·k — and the model — is unchanged.
 * `rowLength` is 1 for a bias.
 */
export function permuteRotaryRows(data: Float32Array, heads: number, rowLength: number): Float32Array {
  const rows = data.length / rowLength;
  const headDim = rows / heads;
  if (!Number.isInteger(rows) || !Number.isInteger(headDim) || headDim % 2 !== 0)
    throw new Error(`gguf: cannot split ${data.length} values into ${heads} heads of even size`);
  const half = headDim / 2;
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const from = (h * headDim + j * half + i) * rowLength;
        out.set(data.subarray(from, from + rowLength), (h * headDim + 2 * i + j) * rowLength);
      }
    }
  }
  return out;
}

/** Heads to permute over for a `llama` q or k tensor; null for everything else. */
function rotaryHeads(config: ModelConfig, hfName: string): number | null {
  if (config.architecture !== "llama") return null;
  if (/\.q_proj\.(weight|bias)$/.test(hfName)) return config.numHeads;
  if (/\.k_proj\.(weight|bias)$/.test(hfName)) return config.numKvHeads;
  return null;
}

/**
 * A vocabulary llama.cpp accepts as "gpt2" (byte-level BPE) without any merges:
 * the 256 byte tokens first, so any text still encodes, then placeholders. Its
 * length must equal the embedding's rows: llama.cpp sizes token_embd by it.
 */
function syntheticTokens(vocabSize: number): string[] {
  const bytes = byteToUnicode();
  return Array.from({ length: vocabSize }, (_, id) =>
    id < bytes.length ? (bytes[id] as string) : `[${id}]`,
  );
}

function metadata(config: ModelConfig, name: string, fileType: number): Map<string, GgufValue> {
  const arch = config.architecture;
  const m = new Map<string, GgufValue>([
    ["general.architecture", gguf.string(arch)],
    ["general.name", gguf.string(name)],
    ["general.file_type", gguf.u32(fileType)],
    [`${arch}.vocab_size`, gguf.u32(config.vocabSize)],
    [`${arch}.context_length`, gguf.u32(config.maxPositionEmbeddings)],
    [`${arch}.embedding_length`, gguf.u32(config.hiddenSize)],
    [`${arch}.block_count`, gguf.u32(config.numLayers)],
    [`${arch}.feed_forward_length`, gguf.u32(config.intermediateSize)],
    [`${arch}.attention.head_count`, gguf.u32(config.numHeads)],
    [`${arch}.attention.head_count_kv`, gguf.u32(config.numKvHeads)],
    // Explicit, since head_dim need not be hidden / heads.
    [`${arch}.attention.key_length`, gguf.u32(config.headDim)],
    [`${arch}.attention.value_length`, gguf.u32(config.headDim)],
    [`${arch}.rope.dimension_count`, gguf.u32(config.headDim)],
    [`${arch}.rope.freq_base`, gguf.f32(config.ropeTheta)],
    [`${arch}.attention.layer_norm_rms_epsilon`, gguf.f32(config.rmsNormEps)],
    ["tokenizer.ggml.model", gguf.string("gpt2")],
    ["tokenizer.ggml.pre", gguf.string("default")],
    ["tokenizer.ggml.tokens", gguf.strings(syntheticTokens(config.vocabSize))],
    ["tokenizer.ggml.token_type", gguf.i32s(new Array<number>(config.vocabSize).fill(TOKEN_TYPE_NORMAL))],
    // llama.cpp requires the key for a BPE vocabulary; none are needed for ids.
    ["tokenizer.ggml.merges", gguf.strings([])],
    ["tokenizer.ggml.add_bos_token", gguf.bool(false)],
  ]);
  const eos = config.eosTokenIds[0];
  if (eos !== undefined) m.set("tokenizer.ggml.eos_token_id", gguf.u32(eos));
  if (config.bosTokenId !== null) m.set("tokenizer.ggml.bos_token_id", gguf.u32(config.bosTokenId));
  return m;
}

/** The GGUF contents of a model: metadata, and tensors that are permuted only when written. */
export function modelToGguf(config: ModelConfig, weights: ModelWeights, name = "opentinker"): GgufFile {
  if (config.vision) throw new Error("gguf: vision-language models are not supported by this writer");
  if (config.ropeScaling !== null)
    throw new Error(
      `gguf: rope_scaling ${JSON.stringify(config.ropeScaling)} is not supported by this writer`,
    );
  const tensors: GgufTensor[] = [];
  for (const [hfName, { shape, data, dtype }] of modelWeightTensors(config, weights)) {
    const heads = rotaryHeads(config, hfName);
    const rowLength = shape.length === 2 ? (shape[1] as number) : 1;
    const values = heads === null ? () => data : () => permuteRotaryRows(data, heads, rowLength);
    // A bf16 matrix arrives widened (exactly), so narrowing it gives back its own bits.
    tensors.push(
      dtype === "BF16"
        ? { name: ggufTensorName(hfName), shape, type: "BF16", data: () => floatsToBf16(values()) }
        : { name: ggufTensorName(hfName), shape, data: values },
    );
  }
  const fileType = tensors.some((t) => t.type === "BF16") ? FILE_TYPE_MOSTLY_BF16 : FILE_TYPE_ALL_F32;
  return { metadata: metadata(config, name, fileType), tensors };
}

/** Writes a model held in memory as a GGUF file (bf16 matrices stay bf16); returns its size in bytes. */
export function writeModelGguf(
  path: string,
  config: ModelConfig,
  weights: ModelWeights,
  name?: string,
): Promise<number> {
  return writeGguf(path, modelToGguf(config, weights, name));
}

/** Converts a Hugging Face model directory (config.json + safetensors) to an f32 (or bf16) GGUF file. */
export async function writeHfDirAsGguf(
  dir: string,
  path: string,
  dtype: WeightDtype = "f32",
): Promise<number> {
  const config = await loadModelConfig(dir);
  const weights = await loadModelWeights(dir, config, dtype);
  return writeModelGguf(path, config, weights, basename(dir));
}
