// The physical blocks of the paged KV cache, as ids only: reference counts, a free
// list, and the prefix cache (block key → block) with an LRU of cached blocks that
// no sequence holds. The K/V numbers live in buffers the model step owns.
//
// Every block is in exactly one state:
//   free      refCount 0, not cached, on the free list;
//   cached    refCount 0, registered under a key, evictable (LRU order);
//   in use    refCount > 0 (registered or not).

export class BlockPool {
  private readonly refCounts: Int32Array; // [numBlocks]
  private readonly keys: (string | null)[]; // [numBlocks]: the prefix-cache key, while registered
  private readonly byKey = new Map<string, number>();
  // A stack: freed blocks are reused first, while their memory is still warm.
  private readonly freeList: number[];
  // Cached blocks nobody holds, least recently released first (a Set keeps insertion order).
  private readonly evictable = new Set<number>();
  private reservedCount = 0;
  private evictionCount = 0;

  constructor(readonly numBlocks: number) {
    if (!Number.isInteger(numBlocks) || numBlocks < 1) {
      throw new RangeError(`BlockPool: numBlocks is ${numBlocks}, expected a positive integer`);
    }
    this.refCounts = new Int32Array(numBlocks);
    this.keys = new Array<string | null>(numBlocks).fill(null);
    // Descending, so the first allocations get blocks 0, 1, 2, …
    this.freeList = Array.from({ length: numBlocks }, (_, i) => numBlocks - 1 - i);
  }

  get free(): number {
    return this.freeList.length;
  }

  get cached(): number {
    return this.evictable.size;
  }

  get used(): number {
    return this.numBlocks - this.freeList.length - this.evictable.size;
  }

  get reserved(): number {
    return this.reservedCount;
  }

  get evictions(): number {
    return this.evictionCount;
  }

  /** Blocks an allocation may take now: free or evictable, less those promised to someone. */
  get available(): number {
    return this.freeList.length + this.evictable.size - this.reservedCount;
  }

  refCount(block: number): number {
    return this.refCounts[block] ?? 0;
  }

  keyOf(block: number): string | null {
    return this.keys[block] ?? null;
  }

  isEvictable(block: number): boolean {
    return this.evictable.has(block);
  }

  /** A fresh block with refCount 1; the caller has checked `available` (or holds a reservation). */
  allocate(): number {
    const block = this.freeList.pop() ?? this.evictOldest();
    this.refCounts[block] = 1;
    return block;
  }

  /** One more holder of a block in use or in the prefix cache (a prefix hit revives it). */
  retain(block: number): void {
    const count = this.refCount(block);
    if (count === 0) {
      if (!this.evictable.delete(block))
        throw new Error(`BlockPool: retain of block ${block}, which is free`);
    }
    this.refCounts[block] = count + 1;
  }

  /** One holder less; at zero a cached block becomes evictable, any other goes back to the free list. */
  release(block: number): void {
    const count = this.refCount(block) - 1;
    if (count < 0) throw new Error(`BlockPool: release of block ${block}, which nobody holds`);
    this.refCounts[block] = count;
    if (count > 0) return;
    if (this.keys[block] !== null) this.evictable.add(block);
    else this.freeList.push(block);
  }

  lookup(key: string): number | undefined {
    return this.byKey.get(key);
  }

  /**
   * Makes a full, computed block findable under `key`. When another block already
   * holds the same key (two sequences computed the same prefix at once), the first
   * one stays the cached copy and this block is freed normally later.
   */
  register(block: number, key: string): boolean {
    if (this.keys[block] !== null || this.byKey.has(key)) return false;
    this.keys[block] = key;
    this.byKey.set(key, block);
    return true;
  }

  /** Holds back `count` blocks for allocations promised earlier (see KvCacheManager.fork). */
  reserve(count: number): void {
    if (count > this.available) throw new Error(`BlockPool: cannot reserve ${count} blocks`);
    this.reservedCount += count;
  }

  unreserve(count: number): void {
    if (count > this.reservedCount) throw new Error(`BlockPool: cannot unreserve ${count} blocks`);
    this.reservedCount -= count;
  }

  private evictOldest(): number {
    const oldest = this.evictable.values().next();
    if (oldest.done) throw new Error("BlockPool: no free or evictable block; callers must check `available`");
    const block = oldest.value;
    this.evictable.delete(block);
    this.byKey.delete(this.keys[block] ?? "");
    this.keys[block] = null;
    this.evictionCount++;
    return block;
  }
}
