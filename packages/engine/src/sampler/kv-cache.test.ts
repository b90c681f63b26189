import { describe, expect, it } from "vitest";
import { NO_BLOCK } from "./block-table.ts";
import { KvCacheManager } from "./kv-cache.ts";

const BS = 4;

function manager(numBlocks: number): KvCacheManager {
  return new KvCacheManager({ numBlocks, blockSize: BS });
}

function range(from: number, to: number): number[] {
  return Array.from({ length: to - from }, (_, i) => from + i);
}

/** Admits a prompt and commits its uncached positions, as a step that computed them would. */
function prefill(kv: KvCacheManager, id: string, policyKey: string, prompt: number[]): number {
  const admission = kv.admit(id, policyKey, prompt);
  if (!admission) throw new Error(`prefill: ${id} was not admitted`);
  kv.commit(id, prompt.length - admission.cachedTokens);
  return admission.cachedTokens;
}

/** Appends one token and commits it, as one decode step would. */
function decode(kv: KvCacheManager, id: string, token: number) {
  const result = kv.appendSlots(id, [token]);
  if (!result) throw new Error(`decode: no slot for ${id}`);
  kv.commit(id, 1);
  return result;
}

function table(kv: KvCacheManager, id: string): number[] {
  return Array.from(kv.blockTable(id));
}

function expectNoLeak(kv: KvCacheManager): void {
  const s = kv.stats();
  expect(s.usedBlocks).toBe(0);
  expect(s.reservedBlocks).toBe(0);
  expect(s.freeBlocks + s.cachedBlocks).toBe(s.numBlocks);
}

describe("KvCacheManager: allocation and freeing", () => {
  it("gives a prompt ceil(length / blockSize) blocks and slot = block · blockSize + offset", () => {
    const kv = manager(8);
    expect(kv.admit("a", "p@1", range(0, 10))).toEqual({ cachedTokens: 0 });
    const blocks = table(kv, "a");
    expect(blocks).toHaveLength(3);
    const expected = range(0, 10).map((p) => (blocks[Math.floor(p / BS)] as number) * BS + (p % BS));
    expect(Array.from(kv.slots("a", 0, 10))).toEqual(expected);
    expect(Array.from(kv.slots("a"))).toEqual(expected); // nothing computed yet: every slot is pending
    kv.commit("a", 10);
    expect(kv.slots("a")).toHaveLength(0);
  });

  it("returns every block to the free list or the prefix cache once all sequences are freed", () => {
    const kv = manager(16);
    prefill(kv, "a", "p@1", range(0, 9));
    prefill(kv, "b", "p@1", range(0, 13));
    expect(kv.fork("a", ["a1", "a2"])).toBe(true);
    for (const id of ["a", "a1", "a2", "b"]) for (let t = 0; t < 6; t++) decode(kv, id, t);
    for (const id of ["a", "a1", "a2", "b"]) expect(kv.free(id)).toBe(true);
    expectNoLeak(kv);
    expect(kv.stats().sequences).toBe(0);
  });

  it("freeing an unknown sequence is a no-op that answers false", () => {
    const kv = manager(4);
    expect(kv.free("nobody")).toBe(false);
    expect(kv.stats().freeBlocks).toBe(4);
  });

  it("cancelling a sequence mid-generation releases its own blocks and keeps the shared ones for the others", () => {
    const kv = manager(16);
    prefill(kv, "p", "p@1", range(0, 6)); // one full block, one holding 2 tokens
    const [full, partial] = table(kv, "p") as [number, number];
    kv.fork("p", ["c"]);
    for (let t = 0; t < 7; t++) decode(kv, "c", t); // copy-on-write, then a block of its own
    const own = table(kv, "c").slice(1);
    kv.free("c");
    for (const block of own) expect(kv.refCount(block)).toBe(0);
    expect(kv.refCount(full)).toBe(1);
    expect(kv.refCount(partial)).toBe(1);
    expect(kv.stats().reservedBlocks).toBe(0);
    kv.free("p");
    expectNoLeak(kv);
  });
});

describe("KvCacheManager: prefix caching", () => {
  it("a second request with the same prompt and policy key reuses the cached full blocks", () => {
    const kv = manager(16);
    prefill(kv, "a", "team/adapter@3", range(0, 10));
    expect(kv.admit("b", "team/adapter@3", range(0, 10))).toEqual({ cachedTokens: 8 });
    expect(table(kv, "b").slice(0, 2)).toEqual(table(kv, "a").slice(0, 2));
    expect(table(kv, "b")[2]).not.toBe(table(kv, "a")[2]); // the partial block is never shared by a hit
    expect(kv.refCount(table(kv, "a")[0] as number)).toBe(2);
    expect(kv.computed("b")).toBe(8);
    expect(kv.stats()).toMatchObject({ promptTokens: 20, promptCacheHitTokens: 8 });
  });

  it("another policy key gets no prefix hits: its K/V come from other weights", () => {
    const kv = manager(16);
    prefill(kv, "a", "team/adapter@3", range(0, 10));
    expect(kv.admit("b", "team/adapter@4", range(0, 10))).toEqual({ cachedTokens: 0 });
    const shared = table(kv, "b").filter((block) => table(kv, "a").includes(block));
    expect(shared).toEqual([]);
  });

  it("a prompt that is an exact multiple of blockSize still leaves its last block to compute", () => {
    const kv = manager(16);
    prefill(kv, "a", "p@1", range(0, 8));
    expect(kv.admit("b", "p@1", range(0, 8))).toEqual({ cachedTokens: 4 });
    expect(table(kv, "b")[1]).not.toBe(table(kv, "a")[1]);
    expect(Array.from(kv.slots("b"))).toHaveLength(4);
  });

  it("a one-token prompt is never a hit", () => {
    const kv = manager(4);
    prefill(kv, "a", "p@1", [7]);
    expect(kv.admit("b", "p@1", [7])).toEqual({ cachedTokens: 0 });
  });

  it("only the longest run of matching leading blocks is reused", () => {
    const kv = manager(16);
    prefill(kv, "a", "p@1", range(0, 13));
    const diverging = [...range(0, 4), 99, ...range(5, 13)];
    expect(kv.admit("b", "p@1", diverging)).toEqual({ cachedTokens: 4 });
  });

  it("a block's key covers everything before it: equal tokens after a different prefix do not hit", () => {
    const kv = manager(16);
    prefill(kv, "a", "p@1", [...range(0, 4), ...range(10, 14), 0]);
    expect(kv.admit("b", "p@1", [...range(10, 14), ...range(10, 14), 0])).toEqual({ cachedTokens: 0 });
  });

  it("blocks whose K/V are not computed yet are not hits", () => {
    const kv = manager(16);
    kv.admit("a", "p@1", range(0, 9));
    expect(kv.admit("b", "p@1", range(0, 9))).toEqual({ cachedTokens: 0 });
    kv.commit("a", 5); // chunked prefill: only the first block is complete
    expect(kv.admit("c", "p@1", range(0, 9))).toEqual({ cachedTokens: 4 });
  });

  it("full blocks of a freed sequence stay findable, so a later request with the same prefix still hits", () => {
    const kv = manager(16);
    prefill(kv, "a", "p@1", range(0, 10));
    const blocks = table(kv, "a");
    kv.free("a");
    expect(kv.stats()).toMatchObject({ usedBlocks: 0, cachedBlocks: 2, freeBlocks: 14 });
    expect(kv.admit("b", "p@1", range(0, 10))).toEqual({ cachedTokens: 8 });
    expect(table(kv, "b").slice(0, 2)).toEqual(blocks.slice(0, 2));
    expect(kv.stats().cachedBlocks).toBe(0);
  });

  it("blocks filled by generated tokens are hits for the next turn of the conversation", () => {
    const kv = manager(16);
    prefill(kv, "turn1", "p@1", range(0, 6));
    for (const t of range(100, 106)) decode(kv, "turn1", t); // 12 positions: three full blocks
    kv.free("turn1");
    const turn2 = [...range(0, 6), ...range(100, 106), 50, 51, 52];
    expect(kv.admit("turn2", "p@1", turn2)).toEqual({ cachedTokens: 12 });
  });

  it("two sequences computing the same prefix at once keep one cached copy and free the other cleanly", () => {
    const kv = manager(16);
    kv.admit("a", "p@1", range(0, 9));
    kv.admit("b", "p@1", range(0, 9));
    kv.commit("a", 9);
    kv.commit("b", 9);
    const cachedA = table(kv, "a").filter((block) => kv.isCached(block));
    const cachedB = table(kv, "b").filter((block) => kv.isCached(block));
    expect([cachedA.length, cachedB.length]).toEqual([2, 0]);
    kv.free("a");
    kv.free("b");
    expect(kv.stats()).toMatchObject({ cachedBlocks: 2, freeBlocks: 14 });
  });

  describe("prompts with images (placeholder ids at image positions)", () => {
    // Positions 0..3 text, 4..9 an image (placeholder 99), 10..12 text.
    const prompt = [...range(0, 4), ...new Array<number>(6).fill(99), 10, 11, 12];
    const image = (hash: string, start = 4) => [{ start, length: 6, hash }];

    function admitAndCommit(
      kv: KvCacheManager,
      id: string,
      tokens: number[],
      images: ReturnType<typeof image>,
    ) {
      const admission = kv.admit(id, "p@1", tokens, images);
      if (!admission) throw new Error("not admitted");
      kv.commit(id, tokens.length - admission.cachedTokens);
      return admission.cachedTokens;
    }

    it("the same image at the same positions hits; another image hits only the blocks before it", () => {
      const kv = manager(16);
      expect(admitAndCommit(kv, "a", prompt, image("A"))).toBe(0);
      expect(admitAndCommit(kv, "b", prompt, image("A"))).toBe(12);
      expect(admitAndCommit(kv, "c", prompt, image("B"))).toBe(4);
      // Without image information the placeholder blocks are not those of the image prompt either.
      expect(admitAndCommit(kv, "d", prompt, [])).toBe(4);
    });

    it("the image's offset is part of the key", () => {
      const kv = manager(16);
      const shifted = [...range(0, 3), ...new Array<number>(7).fill(99), 10, 11, 12];
      // Position 3 holds a literal 99 in one prompt and the image's first soft token in the other.
      admitAndCommit(kv, "a", shifted, image("A", 3));
      expect(admitAndCommit(kv, "b", shifted, image("A", 4))).toBe(0);
      expect(admitAndCommit(kv, "c", shifted, image("A", 3))).toBe(12);
    });
  });
});

describe("KvCacheManager: forking and copy-on-write", () => {
  it("forked children share every block of the parent, the partly filled last one included", () => {
    const kv = manager(16);
    prefill(kv, "p", "p@1", range(0, 6));
    expect(kv.fork("p", ["c1", "c2"])).toBe(true);
    for (const id of ["c1", "c2"]) {
      expect(table(kv, id)).toEqual(table(kv, "p"));
      expect(kv.length(id)).toBe(6);
    }
    for (const block of table(kv, "p")) expect(kv.refCount(block)).toBe(3);
  });

  it("copy-on-write happens on the first append into a shared partly filled block, and only then", () => {
    const kv = manager(16);
    prefill(kv, "p", "p@1", range(0, 6));
    const partial = table(kv, "p")[1] as number;
    kv.fork("p", ["c1", "c2"]);

    const first = decode(kv, "c1", 40);
    const own = table(kv, "c1")[1] as number;
    expect(first.copies).toEqual([{ from: partial, to: own, tokens: 2 }]);
    expect(first.slots).toEqual([own * BS + 2]);
    expect(kv.refCount(partial)).toBe(2);

    expect(decode(kv, "c1", 41).copies).toEqual([]); // c1's block is its own now
    expect(decode(kv, "p", 50).copies).toHaveLength(1); // p still shares it with c2
    const last = decode(kv, "c2", 60); // the last holder writes in place
    expect(last.copies).toEqual([]);
    expect(last.slots).toEqual([partial * BS + 2]);
  });

  it("appending after a shared full block takes a new block and copies nothing", () => {
    const kv = manager(16);
    prefill(kv, "p", "p@1", range(0, 8));
    kv.fork("p", ["c"]);
    const result = decode(kv, "c", 9);
    expect(result.copies).toEqual([]);
    expect(table(kv, "c").slice(0, 2)).toEqual(table(kv, "p"));
    expect(table(kv, "c")).toHaveLength(3);
  });

  it("a parent with positions not yet computed cannot be forked", () => {
    const kv = manager(16);
    kv.admit("p", "p@1", range(0, 6));
    expect(() => kv.fork("p", ["c"])).toThrow(/uncomputed/);
  });
});

describe("KvCacheManager: back-pressure", () => {
  it("a request larger than the budget returns null and leaves everything unchanged", () => {
    const kv = manager(4);
    prefill(kv, "a", "p@1", range(0, 6));
    const before = { stats: kv.stats(), table: table(kv, "a") };
    expect(kv.canAllocate(range(0, 17), "p@1")).toBe(false);
    expect(kv.admit("big", "p@1", range(0, 17))).toBeNull();
    expect(kv.has("big")).toBe(false);
    expect({ stats: kv.stats(), table: table(kv, "a") }).toEqual(before);
  });

  it("a refused request that would have revived cached blocks leaves them cached", () => {
    const kv = manager(4);
    prefill(kv, "a", "p@1", range(0, 9));
    kv.free("a"); // two cached blocks, two free
    const before = kv.stats();
    expect(kv.admit("b", "p@1", range(0, 17))).toBeNull(); // 2 hits + 3 new blocks > 4
    expect(kv.stats()).toEqual(before);
    expect(kv.admit("c", "p@1", range(0, 9))).toEqual({ cachedTokens: 8 });
  });

  it("canAllocate counts the extra blocks asked to stay available", () => {
    const kv = manager(4);
    expect(kv.canAllocate(range(0, 8), "p@1", 2)).toBe(true);
    expect(kv.canAllocate(range(0, 8), "p@1", 3)).toBe(false);
  });

  it("an append that cannot get a block returns null and changes nothing", () => {
    const kv = manager(2);
    prefill(kv, "a", "p@1", range(0, 8));
    const before = { stats: kv.stats(), length: kv.length("a"), table: table(kv, "a") };
    expect(kv.canAppend("a")).toBe(false);
    expect(kv.appendSlots("a", [1])).toBeNull();
    expect({ stats: kv.stats(), length: kv.length("a"), table: table(kv, "a") }).toEqual(before);
  });

  it("fork answers false and changes nothing when the children's first blocks are not available", () => {
    const kv = manager(3);
    prefill(kv, "p", "p@1", range(0, 6));
    const before = kv.stats();
    expect(kv.fork("p", ["c1", "c2"])).toBe(false);
    expect(kv.stats()).toEqual(before);
    expect(kv.has("c1")).toBe(false);
    for (const block of table(kv, "p")) expect(kv.refCount(block)).toBe(1);
    expect(kv.fork("p", ["c1"])).toBe(true);
  });

  it("a forked child's first append cannot be starved by a later admission", () => {
    const kv = manager(3);
    prefill(kv, "p", "p@1", range(0, 6));
    kv.fork("p", ["c"]);
    expect(kv.stats().availableBlocks).toBe(0);
    expect(kv.admit("other", "p@1", [1])).toBeNull();
    expect(decode(kv, "c", 9).copies).toHaveLength(1);
    expect(kv.stats().reservedBlocks).toBe(0);
  });

  it("an unused reservation is given back when the child writes in place or is freed", () => {
    const kv = manager(4);
    prefill(kv, "p", "p@1", range(0, 6));
    kv.fork("p", ["c1", "c2"]);
    kv.free("p");
    decode(kv, "c1", 1); // copy-on-write
    expect(decode(kv, "c2", 2).copies).toEqual([]); // sole holder now: in place
    expect(kv.stats()).toMatchObject({ reservedBlocks: 0, availableBlocks: 1 });
  });
});

describe("KvCacheManager: eviction", () => {
  it("cached blocks are evicted only when the free list is empty, least recently used first", () => {
    const kv = manager(4);
    prefill(kv, "x", "p@1", [...range(10, 14), 0]);
    prefill(kv, "y", "p@1", [...range(20, 24), 0]);
    kv.free("x");
    kv.free("y"); // cached: x's block (older), y's block; free: the two partial blocks
    prefill(kv, "z", "p@1", range(30, 32)); // takes a free block: no eviction
    expect(kv.stats()).toMatchObject({ evictions: 0, cachedBlocks: 2, freeBlocks: 1 });
    prefill(kv, "w", "p@1", range(40, 46)); // two blocks: the last free one, then x's
    expect(kv.stats()).toMatchObject({ evictions: 1, cachedBlocks: 1, freeBlocks: 0 });
    kv.free("z");
    kv.free("w");
    expect(kv.admit("x2", "p@1", [...range(10, 14), 0])).toEqual({ cachedTokens: 0 });
    expect(kv.admit("y2", "p@1", [...range(20, 24), 0])).toEqual({ cachedTokens: 4 });
  });

  it("of a freed prompt's blocks the last is evicted first, so its beginning stays cached longest", () => {
    const kv = manager(3);
    prefill(kv, "a", "p@1", range(0, 9));
    kv.free("a"); // two cached blocks, one free
    prefill(kv, "z", "p@1", range(50, 55)); // the free block and one eviction
    kv.free("z");
    expect(kv.admit("a2", "p@1", range(0, 9))).toEqual({ cachedTokens: 4 });
  });

  it("a prefix hit makes a cached block recently used again", () => {
    const kv = manager(4);
    prefill(kv, "x", "p@1", range(10, 14));
    prefill(kv, "y", "p@1", range(20, 24));
    kv.free("x");
    kv.free("y"); // cached, least recent first: x's block, y's block
    prefill(kv, "x2", "p@1", [...range(10, 14), 0]); // revives x's block
    kv.free("x2"); // now y's block is the least recent
    prefill(kv, "z", "p@1", range(30, 39)); // three blocks: the two free ones, then one eviction
    expect(kv.stats().evictions).toBe(1);
    kv.free("z");
    expect(kv.admit("x3", "p@1", [...range(10, 14), 0])).toEqual({ cachedTokens: 4 });
    expect(kv.admit("y3", "p@1", [...range(20, 24), 0])).toEqual({ cachedTokens: 0 });
  });

  it("an admission never evicts the cached blocks it is about to reuse", () => {
    const kv = manager(2);
    prefill(kv, "a", "p@1", [...range(0, 4), 9]);
    kv.free("a"); // a's first block cached, the other free
    prefill(kv, "z", "p@1", range(20, 24));
    kv.free("z"); // cached, least recent first: a's block, z's block; nothing free
    const hit = kv.admit("b", "p@1", [...range(0, 4), 9]);
    expect(hit).toEqual({ cachedTokens: 4 });
    expect(new Set(table(kv, "b")).size).toBe(2);
    expect(kv.stats()).toMatchObject({ evictions: 1, usedBlocks: 2 });
  });

  it("a cached block in use is never evicted", () => {
    const kv = manager(3);
    prefill(kv, "a", "p@1", [...range(0, 8), 9]);
    kv.free("a"); // a's two full blocks cached, its partial block free
    prefill(kv, "b", "p@1", [...range(0, 4), 5]); // holds a's first block again, takes the free one
    const held = table(kv, "b")[0] as number;
    expect(kv.admit("c", "p@1", range(50, 55))).toBeNull(); // needs 2, only 1 evictable
    prefill(kv, "d", "p@1", range(60, 63)); // evicts the one block nobody holds
    expect(kv.refCount(held)).toBe(1);
    expect(kv.isCached(held)).toBe(true);
    expect(table(kv, "d")).not.toContain(held);
  });
});

describe("KvCacheManager: batch block tables", () => {
  it("packs a batch's block tables into one row per sequence, -1 past each sequence's end", () => {
    const kv = manager(8);
    prefill(kv, "a", "p@1", range(0, 3));
    prefill(kv, "b", "p@1", range(10, 20));
    const packed = kv.blockTables(["a", "b"]);
    expect(packed.numSeqs).toBe(2);
    expect(packed.maxBlocksPerSeq).toBe(3);
    expect(Array.from(packed.tables)).toEqual([...table(kv, "a"), NO_BLOCK, NO_BLOCK, ...table(kv, "b")]);
    expect(kv.blockTables(["a"], 5).tables).toHaveLength(5);
    expect(() => kv.blockTables(["b"], 2)).toThrow(RangeError);
  });
});

describe("KvCacheManager: misuse throws", () => {
  it("rejects a duplicate sequence id, an empty prompt, bad token ids and over-long commits", () => {
    const kv = manager(8);
    prefill(kv, "a", "p@1", range(0, 3));
    expect(() => kv.admit("a", "p@1", [1])).toThrow(/already exists/);
    expect(() => kv.admit("e", "p@1", [])).toThrow(/empty/);
    expect(() => kv.admit("e", "p@1", [1.5])).toThrow(RangeError);
    expect(() => kv.commit("a", 1)).toThrow(RangeError);
    expect(() => kv.appendSlots("nobody", [1])).toThrow(/unknown sequence/);
    expect(() => kv.fork("a", ["a"])).toThrow(/already exists/);
  });
});
