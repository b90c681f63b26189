// Base models and workers over the API: shared by every team.
import { z } from "zod";

export const ZBaseModel = z.object({
  id: z.string(),
  name: z.string(),
  architecture: z.string(),
  vocabSize: z.number(),
  contextLength: z.number(),
  visionLanguage: z.boolean(),
  /** Positions one image takes (vision-language models), else null. */
  imageTokens: z.number().nullable(),
});
export type BaseModelInfo = z.infer<typeof ZBaseModel>;

export const ZBaseModelNameRequest = z.object({ name: z.string().min(1) });

/** A base model's tokenizer files, so remote clients tokenize exactly as the workers do. */
export const ZTokenizerFiles = z.object({
  tokenizerJson: z.unknown(),
  tokenizerConfig: z.unknown(),
  chatTemplate: z.string().nullable(),
});
export type TokenizerFiles = z.infer<typeof ZTokenizerFiles>;

export const ZWorker = z.object({
  id: z.string(),
  host: z.string(),
  status: z.enum(["ONLINE", "DRAINING", "OFFLINE"]),
  capacity: z.number(),
  placedAdapters: z.number(),
  loadedModels: z.array(z.string()),
  /** The device it computes on ("cpu", "cuda:N"), what it is, and its memory in MiB (null: unknown). */
  device: z.string(),
  deviceDescription: z.string(),
  deviceMemoryMiB: z.number().int().nullable(),
  /** Each base model's sampler budgets on it, MiB: K/V cache and loaded policy versions (null: unknown). */
  kvCacheMiB: z.number().int().nullable(),
  policyPoolMiB: z.number().int().nullable(),
  /** Memory for adapters' training state, MiB (placement fits adapters within it; null: slots only). */
  adapterMemoryMiB: z.number().int().nullable(),
  /** Bytes the adapters placed on it take, by their training state (those of undescribed base models count 0). */
  placedAdapterBytes: z.number(),
  heartbeatAt: z.string(),
});
export type WorkerInfo = z.infer<typeof ZWorker>;
