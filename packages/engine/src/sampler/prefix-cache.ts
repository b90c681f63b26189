// Automatic prefix caching over the block pool: the chained key of each full block,
// the cached blocks a new prompt can reuse, and registering a sequence's blocks as
// they fill. The KV-cache manager decides when; this decides which block is which.
import { blockHash, type ImageSpan, imagesKey } from "./block-hash.ts";
import type { BlockPool } from "./block-pool.ts";

/** A sequence as the prefix cache sees it. */
export interface KeyedSequence {
  readonly policyKey: string;
  readonly blocks: number[]; // physical block ids, in order
  readonly images: readonly ImageSpan[]; // the prompt's image positions (part of the block keys)
  computed: number; // leading positions whose K/V are written
  keyedBlocks: number; // leading full, computed blocks whose prefix-cache key is known
  lastKey: string | null; // the key of block keyedBlocks − 1
  pending: number[]; // token ids of positions [keyedBlocks · blockSize, length)
}

export interface AdmissionPlan {
  tokens: number[];
  hits: number[];
  lastKey: string | null;
  newBlocks: number;
  /** Blocks the admission takes from `available`: new ones, and cached hits it revives. */
  cost: number;
}

/** The key of the full block at positions [from, from + tokens.length), chained on the previous block's. */
function keyOf(
  policyKey: string,
  parent: string | null,
  tokens: readonly number[],
  images: readonly ImageSpan[],
  from: number,
): string {
  return blockHash(policyKey, parent, tokens, imagesKey(images, from, from + tokens.length));
}

/**
 * What admitting a prompt takes: the longest run of cached full blocks of the same
 * policy key (and the same images at the same positions), and the new blocks for
 * the rest. At least the last prompt token stays uncached, so the step still
 * computes its logits. Without `reuse`, no cached block: every position is computed.
 */
export function planAdmission(
  pool: BlockPool,
  blockSize: number,
  policyKey: string,
  tokens: number[],
  images: readonly ImageSpan[],
  reuse = true,
): AdmissionPlan {
  const bs = blockSize;
  const maxHits = reuse ? Math.floor((tokens.length - 1) / bs) : 0;
  const hits: number[] = [];
  let lastKey: string | null = null;
  for (let i = 0; i < maxHits; i++) {
    const key = keyOf(policyKey, lastKey, tokens.slice(i * bs, (i + 1) * bs), images, i * bs);
    const block = pool.lookup(key);
    if (block === undefined) break;
    hits.push(block);
    lastKey = key;
  }
  const newBlocks = Math.ceil(tokens.length / bs) - hits.length;
  const revived = hits.filter((block) => pool.refCount(block) === 0).length;
  return { tokens, hits, lastKey, newBlocks, cost: newBlocks + revived };
}

/** Registers the sequence's blocks that are now full and computed, generated tokens included. */
export function registerFullBlocks(pool: BlockPool, blockSize: number, seq: KeyedSequence): void {
  const bs = blockSize;
  let consumed = 0;
  while ((seq.keyedBlocks + 1) * bs <= seq.computed) {
    const from = seq.keyedBlocks * bs;
    const key = keyOf(
      seq.policyKey,
      seq.lastKey,
      seq.pending.slice(consumed, consumed + bs),
      seq.images,
      from,
    );
    pool.register(seq.blocks[seq.keyedBlocks] as number, key);
    seq.lastKey = key;
    seq.keyedBlocks++;
    consumed += bs;
  }
  if (consumed > 0) seq.pending.splice(0, consumed);
}
