// Packs prepared sequences end to end into batches for the transformer.
import type { PackedBatch } from "../nn/transformer.ts";
import type { BatchImage } from "../nn/vision.ts";
import type { PreparedImage } from "../vision/input.ts";

export interface PackItem {
  tokens: Int32Array;
  targets: Int32Array;
  /** Images at positions of `tokens`; one that runs past the end keeps only its leading soft tokens. */
  images?: readonly PreparedImage[];
}

/** Packs sequences end to end; positions restart at 0 for each. */
export function pack(items: readonly PackItem[]): PackedBatch {
  const total = items.reduce((sum, item) => sum + item.tokens.length, 0);
  const batch: PackedBatch = {
    tokens: new Int32Array(total),
    positions: new Int32Array(total),
    seqStarts: new Int32Array(items.length + 1),
    targets: new Int32Array(total),
  };
  const images: BatchImage[] = [];
  let at = 0;
  items.forEach((item, i) => {
    batch.seqStarts[i] = at;
    batch.tokens.set(item.tokens, at);
    batch.targets.set(item.targets, at);
    for (let p = 0; p < item.tokens.length; p++) batch.positions[at + p] = p;
    for (const image of item.images ?? []) {
      const count = Math.min(image.length, item.tokens.length - image.start);
      if (count > 0) images.push({ row: at + image.start, count, patches: image.patches });
    }
    at += item.tokens.length;
  });
  batch.seqStarts[items.length] = at;
  // Text-only batches carry no images field, so the forward does no extra work.
  if (images.length > 0) batch.images = images;
  return batch;
}

/** Groups consecutive items so each group holds at most `maxTokens` (a longer item goes alone). */
export function groupByTokens<T extends { tokens: Int32Array }>(
  items: readonly T[],
  maxTokens: number,
): T[][] {
  const groups: T[][] = [];
  let current: T[] = [];
  let size = 0;
  for (const item of items) {
    if (current.length > 0 && size + item.tokens.length > maxTokens) {
      groups.push(current);
      current = [];
      size = 0;
    }
    current.push(item);
    size += item.tokens.length;
  }
  if (current.length > 0) groups.push(current);
  return groups;
}
