// Turns datums into packed batches for the transformer, checking every token.
import { type Datum, modelInputLength } from "@opentinker/protocol";
import type { PackedBatch } from "../nn/transformer.ts";

/** The text tokens of a datum's input, validated against the vocabulary. */
export function inputTokens(datum: Datum, vocabSize: number, context: string): Int32Array {
  const tokens = new Int32Array(modelInputLength(datum.modelInput));
  let at = 0;
  for (const [c, chunk] of datum.modelInput.chunks.entries()) {
    if (chunk.type !== "encoded_text") {
      throw new RangeError(
        `${context}: modelInput.chunks[${c}] is an image, but this base model has no vision input`,
      );
    }
    for (const [i, t] of chunk.tokens.entries()) {
      if (!Number.isInteger(t) || t < 0 || t >= vocabSize) {
        throw new RangeError(
          `${context}: modelInput.chunks[${c}].tokens[${i}] is ${t}, expected a token id in [0, ${vocabSize})`,
        );
      }
      tokens[at++] = t;
    }
  }
  return tokens;
}

export interface PackItem {
  tokens: Int32Array;
  targets: Int32Array;
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
  let at = 0;
  items.forEach((item, i) => {
    batch.seqStarts[i] = at;
    batch.tokens.set(item.tokens, at);
    batch.targets.set(item.targets, at);
    for (let p = 0; p < item.tokens.length; p++) batch.positions[at + p] = p;
    at += item.tokens.length;
  });
  batch.seqStarts[items.length] = at;
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
