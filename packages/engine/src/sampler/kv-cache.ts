// The paged KV-cache manager of the sampler, after vLLM's block manager with
// automatic prefix caching: which physical blocks hold each sequence's K/V, which
// full blocks a new prompt of the same policy version can reuse, and when a shared
// block has to be copied before a write (the block keys and prefix lookups are in
// prefix-cache.ts). It deals in block ids only; the K/V of a layer live in a
// [numBlocks, blockSize, numKvHeads, headDim] buffer of the model step.
//
// A sequence's life: `admit` a prompt (reusing cached prefix blocks), compute the
// uncached prompt positions and `commit` them, `fork` the sampled completions, then
// per step `appendSlots` for the token fed in, compute it, `commit`; `free` at the
// end or on cancellation. Running out of blocks is never an error: `admit`,
// `appendSlots` and `fork` answer null/false and change nothing, so the scheduler
// can queue or preempt.
import type { ImageSpan } from "./block-hash.ts";
import { BlockPool } from "./block-pool.ts";
import { type PackedBlockTables, packBlockTables, slotOf } from "./block-table.ts";
import { type AdmissionPlan, type KeyedSequence, planAdmission, registerFullBlocks } from "./prefix-cache.ts";

export type { ImageSpan } from "./block-hash.ts";

export interface KvCacheOptions {
  /** The budget, in blocks (the caller derives it from a byte budget). */
  numBlocks: number;
  /** Token slots per block. */
  blockSize: number;
}

/** Before writing into block `to`, copy the K/V of the first `tokens` slots of block `from` into it. */
export interface CopyInstruction {
  from: number;
  to: number;
  tokens: number;
}

export interface Admission {
  /** Leading prompt tokens whose K/V came from the prefix cache: the step skips them. */
  cachedTokens: number;
}

export interface AppendResult {
  /** The cache slot of each appended token, in order. */
  slots: number[];
  /** Copy-on-write work the step must do before it writes these slots. */
  copies: CopyInstruction[];
}

export interface KvCacheStats {
  numBlocks: number;
  blockSize: number;
  /** On the free list: never filled, or evicted. */
  freeBlocks: number;
  /** Held by at least one sequence. */
  usedBlocks: number;
  /** Held by no sequence but kept for prefix hits until their space is needed. */
  cachedBlocks: number;
  /** Promised to forked children for their first append. */
  reservedBlocks: number;
  /** What an allocation may take now: free + cached − reserved. */
  availableBlocks: number;
  sequences: number;
  promptTokens: number;
  promptCacheHitTokens: number;
  evictions: number;
}

interface Sequence extends KeyedSequence {
  length: number; // positions with a slot; blocks are always ceil(length / blockSize)
  reserved: number; // blocks held back for this sequence's first append (0 or 1)
}

export class KvCacheManager {
  readonly numBlocks: number;
  readonly blockSize: number;
  private readonly pool: BlockPool;
  private readonly seqs = new Map<string, Sequence>();
  private promptTokens = 0;
  private hitTokens = 0;

  constructor({ numBlocks, blockSize }: KvCacheOptions) {
    if (!Number.isInteger(blockSize) || blockSize < 1) {
      throw new RangeError(`KvCacheManager: blockSize is ${blockSize}, expected a positive integer`);
    }
    this.pool = new BlockPool(numBlocks);
    this.numBlocks = numBlocks;
    this.blockSize = blockSize;
  }

  /** Whether `admit` of this prompt would succeed now with `extraBlocks` still available afterwards. */
  canAllocate(
    promptTokens: ArrayLike<number>,
    policyKey: string,
    extraBlocks = 0,
    images: readonly ImageSpan[] = [],
    reuse = true,
  ): boolean {
    return this.plan(policyKey, promptTokens, images, reuse).cost + extraBlocks <= this.pool.available;
  }

  /**
   * Gives a new sequence slots for its whole prompt, reusing the longest run of
   * cached full blocks of the same policy key (and the same images at the same
   * positions), unless `reuse` is false (a prompt whose every position must be
   * computed). Null (and nothing changed) when the blocks are not available.
   */
  admit(
    seqId: string,
    policyKey: string,
    promptTokens: ArrayLike<number>,
    images: readonly ImageSpan[] = [],
    reuse = true,
  ): Admission | null {
    this.checkNew(seqId);
    const plan = this.plan(policyKey, promptTokens, images, reuse);
    if (plan.cost > this.pool.available) return null;
    // Hits first: retaining them takes them off the LRU, so the allocations below cannot evict them.
    for (const block of plan.hits) this.pool.retain(block);
    const blocks = [...plan.hits];
    for (let i = 0; i < plan.newBlocks; i++) blocks.push(this.pool.allocate());
    const cachedTokens = plan.hits.length * this.blockSize;
    this.seqs.set(seqId, {
      policyKey,
      blocks,
      length: plan.tokens.length,
      computed: cachedTokens,
      keyedBlocks: plan.hits.length,
      lastKey: plan.lastKey,
      pending: plan.tokens.slice(cachedTokens),
      reserved: 0,
      images,
    });
    this.promptTokens += plan.tokens.length;
    this.hitTokens += cachedTokens;
    return { cachedTokens };
  }

  /**
   * Forks a fully computed sequence into children that share all its blocks,
   * the partly filled last one included. Each child's first append needs one
   * block (copy-on-write or a new block); those are held back now, so that
   * append cannot fail. False (and nothing changed) when they are not available.
   */
  fork(parentId: string, childIds: readonly string[]): boolean {
    const parent = this.get(parentId);
    if (parent.computed !== parent.length) {
      throw new Error(
        `KvCacheManager.fork: ${parentId} has uncomputed positions; commit them before forking`,
      );
    }
    if (new Set(childIds).size !== childIds.length) {
      throw new Error("KvCacheManager.fork: duplicate child ids");
    }
    for (const id of childIds) this.checkNew(id);
    if (childIds.length > this.pool.available) return false;
    this.pool.reserve(childIds.length);
    for (const id of childIds) {
      for (const block of parent.blocks) this.pool.retain(block);
      this.seqs.set(id, { ...parent, blocks: [...parent.blocks], pending: [...parent.pending], reserved: 1 });
    }
    return true;
  }

  /** Whether `appendSlots` of `count` tokens would succeed now. */
  canAppend(seqId: string, count = 1): boolean {
    const seq = this.get(seqId);
    return this.appendCost(seq, count) <= this.pool.available + seq.reserved;
  }

  /**
   * Slots for the next tokens of a sequence (the tokens fed into the next step).
   * A new block when the last is full; copy-on-write when the last is partly
   * filled and shared. Null (and nothing changed) when the blocks are not available.
   */
  appendSlots(seqId: string, tokenIds: ArrayLike<number>): AppendResult | null {
    const seq = this.get(seqId);
    const tokens = checkedTokens(tokenIds, `KvCacheManager.appendSlots(${seqId})`);
    if (tokens.length === 0) return { slots: [], copies: [] };
    const cost = this.appendCost(seq, tokens.length);
    if (cost > this.pool.available + seq.reserved) return null;
    // The fork-time reservation covered this first append; whatever it did not use goes back.
    this.pool.unreserve(seq.reserved);
    seq.reserved = 0;
    const copies = this.lastBlockIsShared(seq) ? [this.copyOnWrite(seq)] : [];
    const blocksNeeded = this.blocksFor(seq.length + tokens.length);
    while (seq.blocks.length < blocksNeeded) seq.blocks.push(this.pool.allocate());
    const slots = tokens.map((_, i) => slotOf(seq.blocks, this.blockSize, seq.length + i));
    seq.length += tokens.length;
    seq.pending.push(...tokens);
    return { slots, copies };
  }

  /**
   * The step has written the K/V of the next `count` positions. Blocks that are
   * now full become prefix-cache entries, generated tokens included, so the next
   * turn of a conversation (same prefix, longer) hits them.
   */
  commit(seqId: string, count: number): void {
    const seq = this.get(seqId);
    if (!Number.isInteger(count) || count < 0 || seq.computed + count > seq.length) {
      throw new RangeError(
        `KvCacheManager.commit(${seqId}): count is ${count}, expected an integer in [0, ${seq.length - seq.computed}]`,
      );
    }
    seq.computed += count;
    registerFullBlocks(this.pool, this.blockSize, seq);
  }

  /** Drops a sequence (finished or cancelled). False when it is not known. */
  free(seqId: string): boolean {
    const seq = this.seqs.get(seqId);
    if (!seq) return false;
    // Tail first: among blocks released together the LRU then evicts a prompt's last
    // blocks before its first ones, and the shared beginnings of prompts stay longest.
    for (let i = seq.blocks.length - 1; i >= 0; i--) this.pool.release(seq.blocks[i] as number);
    this.pool.unreserve(seq.reserved);
    this.seqs.delete(seqId);
    return true;
  }

  has(seqId: string): boolean {
    return this.seqs.has(seqId);
  }

  /** Positions that have a slot (computed or about to be). */
  length(seqId: string): number {
    return this.get(seqId).length;
  }

  /** Leading positions whose K/V are in the cache. */
  computed(seqId: string): number {
    return this.get(seqId).computed;
  }

  blockTable(seqId: string): Int32Array {
    return Int32Array.from(this.get(seqId).blocks);
  }

  /** The cache slots of positions [start, end), by default the ones not computed yet. */
  slots(seqId: string, start?: number, end?: number): Int32Array {
    const seq = this.get(seqId);
    const from = start ?? seq.computed;
    const to = end ?? seq.length;
    if (!Number.isInteger(from) || !Number.isInteger(to) || from < 0 || from > to || to > seq.length) {
      throw new RangeError(
        `KvCacheManager.slots(${seqId}): [${from}, ${to}) is not within [0, ${seq.length})`,
      );
    }
    const out = new Int32Array(to - from);
    for (let p = from; p < to; p++) out[p - from] = slotOf(seq.blocks, this.blockSize, p);
    return out;
  }

  /** The block tables of a batch, one row per sequence, for the attention kernel. */
  blockTables(seqIds: readonly string[], maxBlocksPerSeq?: number): PackedBlockTables {
    return packBlockTables(
      seqIds.map((id) => this.get(id).blocks),
      maxBlocksPerSeq,
    );
  }

  refCount(block: number): number {
    return this.pool.refCount(block);
  }

  /** Whether a block is registered in the prefix cache (held or evictable). */
  isCached(block: number): boolean {
    return this.pool.keyOf(block) !== null;
  }

  stats(): KvCacheStats {
    const pool = this.pool;
    return {
      numBlocks: this.numBlocks,
      blockSize: this.blockSize,
      freeBlocks: pool.free,
      usedBlocks: pool.used,
      cachedBlocks: pool.cached,
      reservedBlocks: pool.reserved,
      availableBlocks: pool.available,
      sequences: this.seqs.size,
      promptTokens: this.promptTokens,
      promptCacheHitTokens: this.hitTokens,
      evictions: pool.evictions,
    };
  }

  private plan(
    policyKey: string,
    promptTokens: ArrayLike<number>,
    images: readonly ImageSpan[],
    reuse: boolean,
  ): AdmissionPlan {
    const tokens = checkedTokens(promptTokens, "KvCacheManager.admit");
    if (tokens.length === 0) throw new RangeError("KvCacheManager.admit: the prompt is empty");
    return planAdmission(this.pool, this.blockSize, policyKey, tokens, images, reuse);
  }

  private appendCost(seq: Sequence, count: number): number {
    const grow = this.blocksFor(seq.length + count) - seq.blocks.length;
    return grow + (count > 0 && this.lastBlockIsShared(seq) ? 1 : 0);
  }

  /** A partly filled last block that another sequence also holds: writing into it needs a copy first. */
  private lastBlockIsShared(seq: Sequence): boolean {
    const last = seq.blocks[seq.blocks.length - 1];
    return seq.length % this.blockSize !== 0 && last !== undefined && this.pool.refCount(last) > 1;
  }

  private copyOnWrite(seq: Sequence): CopyInstruction {
    const index = seq.blocks.length - 1;
    const from = seq.blocks[index] as number;
    const to = this.pool.allocate();
    this.pool.release(from);
    seq.blocks[index] = to;
    return { from, to, tokens: seq.length % this.blockSize };
  }

  private blocksFor(tokens: number): number {
    return Math.ceil(tokens / this.blockSize);
  }

  private get(seqId: string): Sequence {
    const seq = this.seqs.get(seqId);
    if (!seq) throw new Error(`KvCacheManager: unknown sequence ${seqId}`);
    return seq;
  }

  private checkNew(seqId: string): void {
    if (this.seqs.has(seqId)) throw new Error(`KvCacheManager: sequence ${seqId} already exists`);
  }
}

function checkedTokens(tokens: ArrayLike<number>, context: string): number[] {
  const ids = Array.from(tokens);
  ids.forEach((t, i) => {
    if (!Number.isInteger(t) || t < 0 || t > 0x7fffffff) {
      throw new RangeError(`${context}: tokens[${i}] is ${t}, expected a token id (a non-negative int32)`);
    }
  });
  return ids;
}
