// What one worker process holds: the base models it serves, one sampler per
// base model (shared by every team's adapters, C9), the snapshot store, and the
// training state of the adapters placed on it.
import type { Db } from "@opentinker/db";
import {
  BASE_KEY,
  type BaseModel,
  defaultBackend,
  loadBaseModel,
  type PolicySession,
  type PolicySource,
  Sampler,
} from "@opentinker/engine";
import type { Backend } from "@opentinker/kernels";
import type { PolicyRef } from "@opentinker/protocol";
import type { ObjectStore } from "@opentinker/store";
import { openAdapterSession } from "./adapter-session.ts";
import type { SamplerBudgets } from "./budgets.ts";
import { DbSnapshotRegistry } from "./db-registry.ts";

export interface HostedBase {
  id: string;
  name: string;
  model: BaseModel;
}

export class EngineHost {
  readonly registry: DbSnapshotRegistry;
  private readonly bases = new Map<string, HostedBase>();
  private readonly samplers = new Map<string, Sampler>();
  private readonly sessions = new Map<string, Promise<PolicySession>>();
  private readonly adapterBase = new Map<string, string>();

  /**
   * `store`: where snapshots and checkpoints are (the local folder, or the
   * bucket every host shares); `remoteEnvHosts`: the hosts remote environments
   * may be on (OPENTINKER_REMOTE_ENV_HOSTS); `backend`: the device every base
   * model, adapter and sampler of this worker lives on (WORKER_DEVICE).
   */
  constructor(
    readonly db: Db,
    readonly store: ObjectStore,
    readonly remoteEnvHosts: readonly string[] = [],
    private readonly budgets: Partial<SamplerBudgets> = {},
    readonly backend: Backend = defaultBackend(),
  ) {
    this.registry = new DbSnapshotRegistry(db, (adapterId) => this.baseNameOfAdapter(adapterId));
  }

  /** Loads every registered base model whose files are readable here. */
  async loadBases(log: (line: string) => void): Promise<HostedBase[]> {
    for (const row of await this.db.baseModel.findMany({ orderBy: { name: "asc" } })) {
      try {
        this.bases.set(row.id, {
          id: row.id,
          name: row.name,
          model: await loadBaseModel(row.path, row.name, { backend: this.backend }),
        });
      } catch (error) {
        log(`worker: base model ${row.name} at ${row.path} not loaded: ${(error as Error).message}`);
      }
    }
    return [...this.bases.values()];
  }

  hostedBases(): HostedBase[] {
    return [...this.bases.values()];
  }

  base(id: string): HostedBase {
    const base = this.bases.get(id);
    if (!base) throw new RangeError(`base model ${id} is not loaded on this worker`);
    return base;
  }

  /** The hosted base a session's policy trains over. */
  baseOf(session: PolicySession): HostedBase {
    for (const base of this.bases.values()) if (base.model === session.policy.base) return base;
    throw new RangeError(`base model ${session.policy.base.name} is not loaded on this worker`);
  }

  baseByName(name: string): HostedBase {
    for (const base of this.bases.values()) if (base.name === name) return base;
    throw new RangeError(`unknown base model "${name}"`);
  }

  async baseNameOfAdapter(adapterId: string): Promise<string> {
    let name = this.adapterBase.get(adapterId);
    if (!name) {
      const row = await this.db.adapter.findUnique({
        where: { id: adapterId },
        select: { baseModel: { select: { name: true } } },
      });
      if (!row) throw new RangeError(`adapter ${adapterId} not found`);
      name = row.baseModel.name;
      this.adapterBase.set(adapterId, name);
    }
    return name;
  }

  /** The sampler of a base model, shared by every adapter over it. */
  sampler(baseId: string): Sampler {
    let sampler = this.samplers.get(baseId);
    if (!sampler) {
      sampler = new Sampler({
        ...this.budgets,
        base: this.base(baseId).model,
        store: this.store,
        registry: this.registry,
      });
      this.samplers.set(baseId, sampler);
    }
    return sampler;
  }

  /** What a team's sampling call names, resolved within that team: the base, or the team's snapshot. */
  async policySource(teamId: string, policy: PolicyRef): Promise<PolicySource> {
    return "handle" in policy ? this.registry.resolveInTeam(teamId, policy.handle) : BASE_KEY;
  }

  /** A team's adapter's training state here, restored from its last checkpoint on first use. */
  async session(teamId: string, adapterId: string): Promise<PolicySession> {
    let session = this.sessions.get(adapterId);
    if (!session) {
      session = openAdapterSession(this, teamId, adapterId);
      session.catch(() => this.sessions.delete(adapterId));
      this.sessions.set(adapterId, session);
    }
    const opened = await session;
    if (opened.where.teamId !== teamId) throw new RangeError(`adapter ${adapterId} not found`);
    return opened;
  }

  private readonly drainController = new AbortController();

  /** Set on SIGTERM: running jobs stop within their step and go back to the queue. */
  get draining(): boolean {
    return this.drainController.signal.aborted;
  }

  /** Aborts when the worker starts draining. */
  get drainSignal(): AbortSignal {
    return this.drainController.signal;
  }

  drain(): void {
    this.drainController.abort();
  }

  /** Drops every adapter's in-memory state (this worker was written off as lost). */
  releaseAll(): void {
    this.sessions.clear();
  }

  /** Whether this worker has the adapter's state in memory (opened or opening). */
  holds(adapterId: string): boolean {
    return this.sessions.has(adapterId);
  }

  /** Drops an adapter's in-memory state (its job ended, or it was re-placed). */
  release(adapterId: string): void {
    this.sessions.delete(adapterId);
  }
}
