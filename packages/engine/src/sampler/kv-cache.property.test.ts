// Random admit / fork / append / commit / free sequences against a shadow K/V
// store: each slot holds a label of what the step computed there (policy key and
// the whole token prefix), so a shared block handed to the wrong sequence, a
// missing copy-on-write or a write into a shared block shows up as a wrong label.
import { describe, expect, it } from "vitest";
import { Rng } from "../rng.ts";
import { type CopyInstruction, KvCacheManager } from "./kv-cache.ts";

const BS = 4;
const NUM_BLOCKS = 14;
const POLICIES = ["team/a@1", "team/a@2"];
const PREFIXES = [[], [1, 2, 3, 4, 5, 6], [1, 2, 3, 4, 7, 7, 7, 7, 0], [3, 3, 3, 3]];

interface Model {
  policyKey: string;
  tokens: number[]; // every position with a slot
  reserved: number; // the block promised at fork time, until the first append
}

class Harness {
  readonly kv = new KvCacheManager({ numBlocks: NUM_BLOCKS, blockSize: BS });
  readonly live = new Map<string, Model>();
  private readonly shadow: (string | undefined)[] = new Array(NUM_BLOCKS * BS); // [numBlocks · blockSize]
  private nextId = 0;
  /** How often the interesting paths ran, so a test can insist they did. */
  readonly seen = { refusals: 0, forks: 0, copies: 0 };

  constructor(private readonly rng: Rng) {}

  step(): void {
    const r = this.rng.next();
    if (r < 0.3 || this.live.size === 0) this.admit();
    else if (r < 0.65) this.advance(this.pick());
    else if (r < 0.8) this.fork(this.pick());
    else this.free(this.pick());
    this.check();
  }

  freeAll(): void {
    for (const id of [...this.live.keys()]) this.free(id);
    this.check();
  }

  private admit(): void {
    const policyKey = POLICIES[this.int(POLICIES.length)] as string;
    const prefix = PREFIXES[this.int(PREFIXES.length)] as number[];
    const tokens = [...prefix, ...this.tokens(1 + this.int(6))];
    const id = `s${this.nextId++}`;
    const admission = this.unchangedIfRefused(() => this.kv.admit(id, policyKey, tokens));
    if (!admission) return;
    expect(admission.cachedTokens % BS).toBe(0);
    expect(admission.cachedTokens).toBeLessThan(tokens.length);
    this.live.set(id, { policyKey, tokens, reserved: 0 });
    this.compute(id, this.int(tokens.length - admission.cachedTokens + 1));
  }

  /** Computes some pending positions, or appends new tokens when none are pending. */
  private advance(id: string): void {
    const pending = this.kv.length(id) - this.kv.computed(id);
    if (pending > 0) {
      this.compute(id, 1 + this.int(pending));
      return;
    }
    const tokens = this.tokens(1 + this.int(3));
    const result = this.unchangedIfRefused(() => this.kv.appendSlots(id, tokens));
    if (!result) return;
    const model = this.live.get(id) as Model;
    model.reserved = 0;
    model.tokens.push(...tokens);
    expect(Array.from(this.kv.slots(id))).toEqual(result.slots);
    this.applyCopies(result.copies);
    if (this.rng.next() < 0.8) this.compute(id, tokens.length);
  }

  private fork(id: string): void {
    if (this.kv.computed(id) !== this.kv.length(id)) return;
    const children = Array.from({ length: 1 + this.int(3) }, () => `s${this.nextId++}`);
    if (!this.unchangedIfRefused(() => this.kv.fork(id, children))) return;
    this.seen.forks++;
    const parent = this.live.get(id) as Model;
    for (const child of children) {
      this.live.set(child, { policyKey: parent.policyKey, tokens: [...parent.tokens], reserved: 1 });
    }
  }

  private free(id: string): void {
    expect(this.kv.free(id)).toBe(true);
    this.live.delete(id);
  }

  /** What a model step does: write each pending position's K/V, then commit them. */
  private compute(id: string, count: number): void {
    const model = this.live.get(id) as Model;
    const start = this.kv.computed(id);
    const slots = this.kv.slots(id, start, start + count);
    slots.forEach((slot, i) => {
      const block = Math.floor(slot / BS);
      // Only a sequence's own, not yet cached block may be written.
      expect(this.kv.refCount(block)).toBe(1);
      expect(this.kv.isCached(block)).toBe(false);
      this.shadow[slot] = label(model, start + i);
    });
    this.kv.commit(id, count);
  }

  private applyCopies(copies: readonly CopyInstruction[]): void {
    this.seen.copies += copies.length;
    for (const { from, to, tokens } of copies) {
      for (let t = 0; t < tokens; t++) this.shadow[to * BS + t] = this.shadow[from * BS + t];
    }
  }

  /** A refused request must leave the manager exactly as it was. */
  private unchangedIfRefused<T>(attempt: () => T | null | false): T | null | false {
    const before = this.snapshot();
    const result = attempt();
    if (result === null || result === false) {
      this.seen.refusals++;
      expect(this.snapshot()).toEqual(before);
    }
    return result;
  }

  private snapshot() {
    const tables = [...this.live.keys()].map((id) => [
      id,
      Array.from(this.kv.blockTable(id)),
      this.kv.length(id),
    ]);
    const refs = Array.from({ length: NUM_BLOCKS }, (_, b) => [this.kv.refCount(b), this.kv.isCached(b)]);
    return { stats: this.kv.stats(), tables, refs };
  }

  /** Each block is free, cached-evictable, or in use with refCount = the tables that hold it. */
  private check(): void {
    const holders = new Array<number>(NUM_BLOCKS).fill(0);
    for (const [id, model] of this.live) {
      const table = Array.from(this.kv.blockTable(id));
      expect(new Set(table).size).toBe(table.length);
      expect(table.length).toBe(Math.ceil(model.tokens.length / BS));
      for (const block of table) holders[block] = (holders[block] ?? 0) + 1;
      this.checkContents(id, model);
    }
    const count = { used: 0, cached: 0, free: 0 };
    holders.forEach((n, block) => {
      expect(this.kv.refCount(block)).toBe(n);
      if (n > 0) count.used++;
      else if (this.kv.isCached(block)) count.cached++;
      else count.free++;
    });
    const reserved = [...this.live.values()].reduce((sum, m) => sum + m.reserved, 0);
    const stats = this.kv.stats();
    expect({ used: stats.usedBlocks, cached: stats.cachedBlocks, free: stats.freeBlocks }).toEqual(count);
    expect(stats.reservedBlocks).toBe(reserved);
    expect(stats.availableBlocks).toBeGreaterThanOrEqual(0);
  }

  /** Every computed position's slot holds the K/V of this sequence's own prefix and policy. */
  private checkContents(id: string, model: Model): void {
    const computed = this.kv.computed(id);
    const slots = this.kv.slots(id, 0, computed);
    slots.forEach((slot, p) => {
      expect(this.shadow[slot], `${id} position ${p}`).toBe(label(model, p));
    });
  }

  private pick(): string {
    return [...this.live.keys()][this.int(this.live.size)] as string;
  }

  private tokens(n: number): number[] {
    return Array.from({ length: n }, () => this.int(3));
  }

  private int(n: number): number {
    return Math.floor(this.rng.next() * n);
  }
}

function label(model: Model, position: number): string {
  return `${model.policyKey}|${model.tokens.slice(0, position + 1).join(",")}`;
}

describe("KvCacheManager under random admit / fork / append / free", () => {
  for (const seed of [1, 2, 3, 4, 5, 6]) {
    it(`keeps ref counts, block states and cached K/V consistent (seed ${seed})`, () => {
      const harness = new Harness(new Rng(seed));
      for (let i = 0; i < 400; i++) harness.step();
      const stats = harness.kv.stats();
      // The run must have exercised the paths it checks.
      expect(stats.promptCacheHitTokens).toBeGreaterThan(0);
      expect(stats.evictions).toBeGreaterThan(0);
      expect(
        Object.values(harness.seen).every((n) => n > 0),
        JSON.stringify(harness.seen),
      ).toBe(true);
      harness.freeAll();
      const end = harness.kv.stats();
      expect(end.usedBlocks).toBe(0);
      expect(end.reservedBlocks).toBe(0);
      expect(end.freeBlocks + end.cachedBlocks).toBe(NUM_BLOCKS);
    });
  }
});
