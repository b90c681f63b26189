// Adapters over the API (create, read, their published versions and saved
// states), with the defaults next to the schema that declares them (the API's
// create call, the in-process clients and the worker's sessions all read these).
import { z } from "zod";
import { DIVERGENCE_BOUNDS } from "./divergence.ts";
import { ZSamplerHandle } from "./handles.ts";
import { idRequest } from "./resources.ts";

/** LoRA rank and alpha when a caller names neither (alpha 32, as Tinker). */
export const LORA_DEFAULTS = { rank: 8, alpha: 32 } as const;

export const ZCreateAdapterRequest = z
  .object({
    name: z
      .string()
      .min(1)
      .max(128)
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, "letters, digits, '.', '_' and '-'"),
    baseModel: z.string().min(1),
    kind: z.enum(["LORA", "FULL"]).default("LORA"),
    rank: z.number().int().min(1).max(1024).default(LORA_DEFAULTS.rank),
    // The delta is scaled by alpha / rank: far past this, a step's update swamps the base weights.
    alpha: z
      .number()
      .positive()
      .max(DIVERGENCE_BOUNDS.maxAlpha, `alpha must be at most ${DIVERGENCE_BOUNDS.maxAlpha}`)
      .default(LORA_DEFAULTS.alpha),
    trainAttn: z.boolean().default(true),
    trainMlp: z.boolean().default(true),
    trainUnembed: z.boolean().default(false),
    seed: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .default(0),
  })
  .strict();
export type CreateAdapterRequest = z.infer<typeof ZCreateAdapterRequest>;

/**
 * An adapter's "best" version: the snapshot with the highest validation metric
 * of the job that last validated it (a job's retention never deletes it).
 */
export const ZBestVersion = z.object({
  version: z.number(),
  handle: z.string(),
  /** The job whose validation chose it. */
  jobId: z.string().nullable(),
  /** The validation metric it was chosen by, e.g. "val/reward/mean" (higher is better), and its value. */
  metric: z.string(),
  value: z.number(),
  /** The job step whose validation measured it (0: before any training). */
  step: z.number(),
  markedAt: z.string(),
});
export type BestVersion = z.infer<typeof ZBestVersion>;

export const ZAdapter = z.object({
  id: z.string(),
  name: z.string(),
  baseModel: z.string(),
  kind: z.enum(["LORA", "FULL"]),
  rank: z.number().nullable(),
  alpha: z.number().nullable(),
  trainAttn: z.boolean(),
  trainMlp: z.boolean(),
  trainUnembed: z.boolean(),
  seed: z.number(),
  status: z.enum(["ACTIVE", "ARCHIVED"]),
  step: z.number(),
  createdAt: z.string(),
  /** Null until a job with validation has validated it. */
  best: ZBestVersion.nullable(),
});
export type AdapterInfo = z.infer<typeof ZAdapter>;

export const ZAdapterIdRequest = idRequest("adapterId");

export const ZSnapshot = z.object({
  version: z.number(),
  handle: z.string(),
  trainerStep: z.number(),
  jobId: z.string().nullable(),
  createdAt: z.string(),
  /**
   * When the training state that produced this version was lost and its job
   * resumed from an earlier checkpoint: no surviving state has these weights
   * (they stay loadable). Null for a version on the adapter's current line.
   */
  supersededAt: z.string().nullable(),
  /** The names this version holds among the adapter's named versions (today: "best"). */
  tags: z.array(z.string()),
});
export type SnapshotVersion = z.infer<typeof ZSnapshot>;

export const ZRecentSnapshotsRequest = z.object({ limit: z.number().int().min(1).max(100).default(10) });
export const ZRecentSnapshot = ZSnapshot.extend({ adapterId: z.string(), adapterName: z.string() });

/** An adapter's latest version, as the overview lists them: one entry per adapter that has published. */
export const ZAdapterLatestVersion = z.object({
  adapterId: z.string(),
  adapterName: z.string(),
  /** How many versions the adapter has published. */
  versions: z.number(),
  lastPublishedAt: z.string(),
  /** The registry's latest version (after a resumed job: its newest surviving one). */
  latest: ZSnapshot,
});
export type AdapterLatestVersion = z.infer<typeof ZAdapterLatestVersion>;

export const ZSnapshotLookupRequest = z.object({ handle: ZSamplerHandle });
/** A snapshot found by its handle, with what a sampling client needs to tokenize for it. */
export const ZSnapshotInfo = ZSnapshot.extend({ adapterId: z.string(), baseModel: z.string() });
export type SnapshotInfo = z.infer<typeof ZSnapshotInfo>;

export const ZSnapshotDownloadRequest = z.object({ handle: z.string().min(1) });
/** A snapshot's PEFT files, base64-encoded by file name. */
export const ZSnapshotFiles = z.object({ handle: z.string(), files: z.record(z.string(), z.string()) });

export const ZCheckpoint = z.object({
  name: z.string(),
  step: z.number(),
  path: z.string(),
  sizeBytes: z.number(),
  createdAt: z.string(),
});
export type CheckpointInfo = z.infer<typeof ZCheckpoint>;
