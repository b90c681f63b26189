// The policy versions a sampler holds (C9): LoRA adapters of many teams and
// versions over one base, and full-parameter models, loaded by handle from the
// snapshot store (checksum verified), kept within a byte budget with LRU eviction.
// A version pinned by a running request is never evicted.
import type { LoraAdapterBuffers, LoraTable } from "@opentinker/kernels";
import type { ObjectStore } from "@opentinker/store";
import type { BaseModel } from "../base-model.ts";
import type { ModelParams } from "../nn/params.ts";
import { freeFrozenParams, frozenParams } from "../policy/frozen.ts";
import {
  ATTN_MODULES,
  type AttnModule,
  MLP_MODULES,
  type MlpModule,
  peftName,
} from "../policy/lora-policy.ts";
import { readSnapshotFiles } from "../snapshots/peft.ts";
import type { SnapshotRecord, SnapshotRegistry } from "../snapshots/registry.ts";
import { fullSnapshotParams } from "../snapshots/snapshot-params.ts";

export type Module = AttnModule | MlpModule;
export const MODULES: readonly Module[] = [...ATTN_MODULES, ...MLP_MODULES];

export interface LoraEntryWeights {
  /** [layer][module] → weights, or undefined when the adapter does not train it. */
  layers: Partial<Record<Module, LoraAdapterBuffers>>[];
  unembed?: LoraAdapterBuffers;
}

export interface PoolEntry {
  key: string;
  kind: "base" | "lora" | "full";
  /** LoRA: the adapter's slot in the pool's tables. */
  slot: number;
  /** Full-parameter: the model's own weights. */
  params?: ModelParams;
  lora?: LoraEntryWeights;
  bytes: number;
  pins: number;
  lastUsed: number;
}

/** Per layer and module, one table over every loaded adapter (index = slot). */
export interface PoolLoraTables {
  layers: Record<Module, LoraTable>[];
  unembed: LoraTable | null;
}

export class PolicyBudgetError extends Error {
  override name = "PolicyBudgetError";
}

export const BASE_KEY = "base";

/**
 * What a sampling call names: "base", a handle the sampler's registry resolves,
 * or a snapshot the caller already resolved (a service resolves a caller's
 * handle within the caller's team, and passes the record).
 */
export type PolicySource = string | SnapshotRecord;

export const policyKey = (policy: PolicySource): string =>
  typeof policy === "string" ? policy : policy.handle;

export class PolicyPool {
  private readonly entries = new Map<string, PoolEntry>();
  private readonly loading = new Map<string, Promise<PoolEntry>>();
  private tables: PoolLoraTables | null = null;
  private clock = 0;
  private waiters: (() => void)[] = [];

  constructor(
    readonly base: BaseModel,
    private readonly store: ObjectStore,
    private readonly registry: SnapshotRegistry,
    readonly budgetBytes: number,
  ) {
    if (!Number.isFinite(budgetBytes) || budgetBytes <= 0) {
      throw new RangeError(`PolicyPool: budgetBytes must be a positive number, got ${budgetBytes}`);
    }
    this.entries.set(BASE_KEY, { key: BASE_KEY, kind: "base", slot: -1, bytes: 0, pins: 0, lastUsed: 0 });
  }

  get loadedBytes(): number {
    let total = 0;
    for (const e of this.entries.values()) total += e.bytes;
    return total;
  }

  has(key: string): boolean {
    return this.entries.has(key);
  }

  /** The entry for a policy, loaded if needed, pinned until release. */
  async acquire(policy: PolicySource): Promise<PoolEntry> {
    const key = policyKey(policy);
    let entry = this.entries.get(key);
    if (!entry) {
      let pending = this.loading.get(key);
      if (!pending) {
        pending = this.load(policy).finally(() => this.loading.delete(key));
        this.loading.set(key, pending);
      }
      entry = await pending;
    }
    entry.pins++;
    entry.lastUsed = ++this.clock;
    return entry;
  }

  release(entry: PoolEntry): void {
    if (entry.pins <= 0) throw new Error(`policy pool: ${entry.key} released more often than acquired`);
    entry.pins--;
    if (entry.pins === 0) for (const wake of this.waiters.splice(0)) wake();
  }

  /** The adapter tables of the current membership (rebuilt only when it changes). */
  loraTables(): PoolLoraTables {
    if (!this.tables) this.tables = this.buildTables();
    return this.tables;
  }

  private async load(policy: PolicySource): Promise<PoolEntry> {
    const record = typeof policy === "string" ? await this.registry.resolve(policy) : policy;
    const key = record.handle;
    const files = await this.store.get(record.path, record.checksum);
    const snapshot = readSnapshotFiles(files, key);
    let bytes = 0;
    for (const t of snapshot.tensors.values()) bytes += t.byteLength;
    await this.makeRoom(bytes, key);
    const entry: PoolEntry =
      snapshot.kind === "lora"
        ? {
            key,
            kind: "lora",
            slot: -1,
            lora: this.loraWeights(snapshot.tensors, snapshot.alpha / snapshot.rank, key),
            bytes,
            pins: 0,
            lastUsed: 0,
          }
        : {
            key,
            kind: "full",
            slot: -1,
            params: fullSnapshotParams(this.base, snapshot.tensors, key),
            bytes,
            pins: 0,
            lastUsed: 0,
          };
    this.entries.set(key, entry);
    this.renumber();
    return entry;
  }

  /** Evicts least recently used unpinned versions until `bytes` more fit; waits while everything is pinned. */
  private async makeRoom(bytes: number, key: string): Promise<void> {
    if (bytes > this.budgetBytes) {
      throw new PolicyBudgetError(
        `policy ${key} needs ${bytes} bytes, more than the pool's budget of ${this.budgetBytes}`,
      );
    }
    while (this.loadedBytes + bytes > this.budgetBytes) {
      const victim = [...this.entries.values()]
        .filter((e) => e.kind !== "base" && e.pins === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (victim) {
        this.entries.delete(victim.key);
        this.renumber();
        this.freeEntry(victim);
      } else {
        await new Promise<void>((resolve) => this.waiters.push(resolve));
      }
    }
  }

  private renumber(): void {
    let slot = 0;
    for (const e of this.entries.values()) if (e.kind === "lora") e.slot = slot++;
    this.tables = null;
  }

  /** An evicted version's buffers go back to the device: a LoRA adapter's matrices, a full model's weights. */
  private freeEntry(entry: PoolEntry): void {
    if (entry.params) freeFrozenParams(entry.params);
    const be = this.base.backend;
    const all = [...(entry.lora?.layers ?? []).flatMap((l) => Object.values(l)), entry.lora?.unembed];
    for (const w of all) {
      if (!w) continue;
      be.free(w.a);
      be.free(w.b);
    }
  }

  /** The adapter's matrices on the device, every pair checked before any is uploaded. */
  private loraWeights(tensors: Map<string, Float32Array>, scale: number, key: string): LoraEntryWeights {
    const be = this.base.backend;
    const pair = (module: Module | "unembed", layer: number): [Float32Array, Float32Array] | undefined => {
      const a = tensors.get(peftName(module, layer, "A"));
      const b = tensors.get(peftName(module, layer, "B"));
      if (!a && !b) return undefined;
      if (!a || !b) throw new Error(`${key}: ${peftName(module, layer, a ? "B" : "A")} is missing`);
      return [a, b];
    };
    for (let l = 0; l < this.base.config.numLayers; l++) for (const m of MODULES) pair(m, l);
    pair("unembed", 0);
    const take = (module: Module | "unembed", layer: number): LoraAdapterBuffers | undefined => {
      const found = pair(module, layer);
      return found && { a: be.upload(found[0]), b: be.upload(found[1]), scale };
    };
    const layers = Array.from({ length: this.base.config.numLayers }, (_, l) => {
      const out: Partial<Record<Module, LoraAdapterBuffers>> = {};
      for (const m of MODULES) {
        const w = take(m, l);
        if (w) out[m] = w;
      }
      return out;
    });
    return { layers, unembed: take("unembed", 0) };
  }

  private buildTables(): PoolLoraTables {
    const adapters = [...this.entries.values()]
      .filter((e) => e.kind === "lora")
      .sort((a, b) => a.slot - b.slot);
    const params = frozenParams(this.base);
    // An adapter without a module gets a zero rank-1 stand-in, so slots line up.
    const be = this.base.backend;
    const zero = (dIn: number, dOut: number): LoraAdapterBuffers => ({
      a: be.alloc("f32", [1, dIn]),
      b: be.alloc("f32", [dOut, 1]),
      scale: 0,
    });
    const layers = params.layers.map((layer, l) => {
      const out = {} as Record<Module, LoraTable>;
      for (const m of MODULES) {
        const p = layer[m];
        out[m] = be.createLoraTable(
          p.dIn,
          p.dOut,
          adapters.map((e) => e.lora?.layers[l]?.[m] ?? zero(p.dIn, p.dOut)),
        );
      }
      return out;
    });
    const { hiddenSize, vocabSize } = this.base.config;
    const anyUnembed = adapters.some((e) => e.lora?.unembed);
    const unembed = anyUnembed
      ? be.createLoraTable(
          hiddenSize,
          vocabSize,
          adapters.map((e) => e.lora?.unembed ?? zero(hiddenSize, vocabSize)),
        )
      : null;
    return { layers, unembed };
  }
}
