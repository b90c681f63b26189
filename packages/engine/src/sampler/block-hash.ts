// The prefix-cache key of one full KV block. The K/V of a block depend on every
// token before it and on the weights that projected them, so the key chains the
// previous block's key and includes the policy key (a LoRA adapter changes the
// K/V projections: two policy versions must never share a block).
import { createHash } from "node:crypto";

/**
 * The key of a full block: SHA-256 over (policy key, the previous block's key,
 * the block's token ids). A cryptographic hash because a collision would
 * silently hand a sequence another prompt's K/V; the cost is one digest per
 * `blockSize` tokens.
 */
export function blockHash(policyKey: string, parent: string | null, tokens: ArrayLike<number>): string {
  const hash = createHash("sha256");
  // Length-prefixed, so no policy key can run into the parent key or the tokens.
  hash.update(`${policyKey.length}:${policyKey}|${parent ?? ""}|`);
  const ids = Int32Array.from(tokens);
  hash.update(new Uint8Array(ids.buffer, ids.byteOffset, ids.byteLength));
  return hash.digest("base64");
}
