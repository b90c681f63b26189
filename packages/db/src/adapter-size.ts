// What an adapter's training state costs a worker (placement by memory, issue
// 45): one home for the formula, used when an adapter is made and when its
// base model's sizes become known.
import type { AdapterKind } from "./generated/prisma/client.ts";

/** What of an adapter decides its size. */
export interface AdapterShape {
  kind: AdapterKind;
  rank?: number | undefined;
  trainAttn?: boolean | undefined;
  trainMlp?: boolean | undefined;
  trainUnembed?: boolean | undefined;
}

/** A base model's trainable sizes, as registered (null: not described). */
export interface TrainableSizes {
  attnParamsPerRank: number | null;
  mlpParamsPerRank: number | null;
  unembedParamsPerRank: number | null;
  parameters: number | null;
}

/** f32 weights, gradient and two AdamW moments: what a trainable parameter costs a worker. */
const BYTES_PER_TRAINED_PARAMETER = 16;

/**
 * The bytes an adapter's training state takes on a worker, or null when the
 * base model's sizes are unknown (placement then counts its slot only).
 */
export function adapterStateBytes(sizes: TrainableSizes, adapter: AdapterShape): number | null {
  if (adapter.kind === "FULL")
    return sizes.parameters === null ? null : BYTES_PER_TRAINED_PARAMETER * sizes.parameters;
  const { attnParamsPerRank: attn, mlpParamsPerRank: mlp, unembedParamsPerRank: unembed } = sizes;
  if (attn === null || mlp === null || unembed === null) return null;
  const perRank =
    ((adapter.trainAttn ?? true) ? attn : 0) +
    ((adapter.trainMlp ?? true) ? mlp : 0) +
    (adapter.trainUnembed ? unembed : 0);
  return BYTES_PER_TRAINED_PARAMETER * (adapter.rank ?? 0) * perRank;
}
