// The prefix-cache key of one full KV block. The K/V of a block depend on every
// token before it and on the weights that projected them, so the key chains the
// previous block's key and includes the policy key (a LoRA adapter changes the
// K/V projections: two policy versions must never share a block). Positions an
// image covers hold one placeholder id whatever the image, so a block that
// overlaps an image also hashes the image's content and offset.
import { createHash } from "node:crypto";

/**
 * The key of a full block: SHA-256 over (policy key, the previous block's key,
 * the block's token ids, and the images it overlaps, when any). A cryptographic
 * hash because a collision would silently hand a sequence another prompt's K/V;
 * the cost is one digest per `blockSize` tokens.
 */
export function blockHash(
  policyKey: string,
  parent: string | null,
  tokens: ArrayLike<number>,
  images?: string,
): string {
  const hash = createHash("sha256");
  // Length-prefixed, so no policy key can run into the parent key or the tokens.
  hash.update(`${policyKey.length}:${policyKey}|${parent ?? ""}|`);
  const ids = Int32Array.from(tokens);
  hash.update(new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength));
  // After the fixed-length token bytes, so it cannot be confused with them.
  if (images !== undefined) hash.update(`|images:${images}`);
  return hash.digest("base64");
}

/** Positions [start, start + length) of a prompt hold the soft tokens of the image with this content hash. */
export interface ImageSpan {
  start: number;
  length: number;
  hash: string;
}

/** The images overlapping positions [from, to), as a key part (undefined when none). */
export function imagesKey(images: readonly ImageSpan[], from: number, to: number): string | undefined {
  let key: string | undefined;
  for (const image of images) {
    if (image.start >= to || image.start + image.length <= from) continue;
    // The offset tells apart one image placed at two different positions within a block.
    const part = `${image.hash}@${image.start - from}`;
    key = key === undefined ? part : `${key},${part}`;
  }
  return key;
}
