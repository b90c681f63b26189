// Snapshot files: a LoRA policy as a PEFT adapter (adapter_config.json +
// adapter_model.safetensors, loadable by PEFT or vLLM), a full-parameter policy as
// a Hugging Face model (config.json + model.safetensors).
import { z } from "zod";
import {
  decodeSafetensors,
  encodeSafetensors,
  type ModelConfig,
  modelConfigToJson,
  parseModelConfig,
} from "../model/index.ts";
import type { Policy } from "../policy/policy.ts";

export const ADAPTER_CONFIG = "adapter_config.json";
export const ADAPTER_WEIGHTS = "adapter_model.safetensors";
export const MODEL_CONFIG = "config.json";
export const MODEL_WEIGHTS = "model.safetensors";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

const ZAdapterConfig = z.object({
  peft_type: z.literal("LORA"),
  r: z.number().int().positive(),
  lora_alpha: z.number().positive(),
  target_modules: z.array(z.string()),
  base_model_name_or_path: z.string().nullable().optional(),
});

function targetModules(policy: Policy): string[] {
  const spec = policy.lora;
  if (!spec) return [];
  return [
    ...(spec.trainAttn ? ["q_proj", "k_proj", "v_proj", "o_proj"] : []),
    ...(spec.trainMlp ? ["gate_proj", "up_proj", "down_proj"] : []),
    ...(spec.trainUnembed ? ["lm_head"] : []),
  ];
}

/** The files of a snapshot of `policy` as it is now (copies: later training does not change them). */
export function snapshotFiles(policy: Policy): Map<string, Uint8Array> {
  const tensors = policy.tensors.map((t) => ({
    name: t.name,
    dtype: "F32" as const,
    shape: t.shape,
    data: policy.params.backend.download(t.value),
  }));
  if (policy.kind === "full") {
    const config = modelConfigToJson(policy.base.config);
    return new Map([
      [MODEL_CONFIG, encoder.encode(`${JSON.stringify(config, null, 2)}\n`)],
      [MODEL_WEIGHTS, encodeSafetensors(tensors, { format: "pt" })],
    ]);
  }
  const spec = policy.lora;
  if (!spec) throw new Error("snapshotFiles: a LoRA policy without its spec");
  const adapterConfig = {
    peft_type: "LORA",
    task_type: "CAUSAL_LM",
    base_model_name_or_path: policy.base.name,
    r: spec.rank,
    lora_alpha: spec.alpha,
    lora_dropout: 0,
    bias: "none",
    fan_in_fan_out: false,
    inference_mode: true,
    use_rslora: false,
    target_modules: targetModules(policy),
  };
  return new Map([
    [ADAPTER_CONFIG, encoder.encode(`${JSON.stringify(adapterConfig, null, 2)}\n`)],
    [ADAPTER_WEIGHTS, encodeSafetensors(tensors, { format: "pt" })],
  ]);
}

/** A LoRA snapshot read back: its rank, alpha and tensors by PEFT name. */
export interface LoraSnapshot {
  kind: "lora";
  rank: number;
  alpha: number;
  targetModules: string[];
  tensors: Map<string, Float32Array>;
}

export interface FullSnapshot {
  kind: "full";
  config: ModelConfig;
  tensors: Map<string, Float32Array>;
}

export type PolicySnapshot = LoraSnapshot | FullSnapshot;

function required(files: ReadonlyMap<string, Uint8Array>, name: string, where: string): Uint8Array {
  const bytes = files.get(name);
  if (!bytes) throw new Error(`${where}: ${name} is missing`);
  return bytes;
}

function tensorsOf(bytes: Uint8Array, source: string): Map<string, Float32Array> {
  const contents = decodeSafetensors(bytes, source);
  return new Map([...contents.tensors].map(([name, tensor]) => [name, tensor.data]));
}

/** Parses a snapshot's files (already checksum-verified by the store). */
export function readSnapshotFiles(files: ReadonlyMap<string, Uint8Array>, where: string): PolicySnapshot {
  if (files.has(ADAPTER_CONFIG)) {
    const raw = JSON.parse(decoder.decode(required(files, ADAPTER_CONFIG, where)));
    const parsed = ZAdapterConfig.safeParse(raw);
    if (!parsed.success) throw new Error(`${where}/${ADAPTER_CONFIG}: ${parsed.error.issues[0]?.message}`);
    return {
      kind: "lora",
      rank: parsed.data.r,
      alpha: parsed.data.lora_alpha,
      targetModules: parsed.data.target_modules,
      tensors: tensorsOf(required(files, ADAPTER_WEIGHTS, where), `${where}/${ADAPTER_WEIGHTS}`),
    };
  }
  const config = parseModelConfig(
    JSON.parse(decoder.decode(required(files, MODEL_CONFIG, where))),
    `${where}/${MODEL_CONFIG}`,
  );
  return {
    kind: "full",
    config,
    tensors: tensorsOf(required(files, MODEL_WEIGHTS, where), `${where}/${MODEL_WEIGHTS}`),
  };
}
