// Lookups on every call's path (keys, policies, vocabularies) are remembered for
// a few seconds per process: one database round trip less per call.

/** A map whose entries expire `ttlMs` after they are set; cleared when it grows past `maxEntries`. */
export class ShortCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries = 10_000,
  ) {}

  get(key: string): V | undefined {
    const hit = this.entries.get(key);
    if (!hit) return undefined;
    if (hit.until > Date.now()) return hit.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: string, value: V): void {
    if (this.entries.size >= this.maxEntries) this.entries.clear();
    this.entries.set(key, { value, until: Date.now() + this.ttlMs });
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** The cached value, else `load()`'s (remembered unless it is null). */
  async through(key: string, load: () => Promise<V | null>): Promise<V | null> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const value = await load();
    if (value === null) this.delete(key);
    else this.set(key, value);
    return value;
  }
}
