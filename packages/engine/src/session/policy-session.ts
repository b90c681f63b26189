// One policy's lifecycle (C1, C2): train → publish → checkpoint → restore. The
// in-process clients and the worker both run their policies through this; each
// supplies only where objects go (a ObjectStore) and where they are recorded
// (a PolicyRegistry). Nothing is half-written: an object whose record fails is
// deleted again.
import { randomBytes } from "node:crypto";
import {
  type AdamParamsInput,
  type Datum,
  type ForwardBackwardOutput,
  formatStatePath,
  type LossFn,
  type LossFnConfig,
  type OptimStepOutput,
  parseStatePath,
  type SavedWeights,
} from "@opentinker/protocol";
import type { ObjectStore } from "@opentinker/store";
import type { ModelParams } from "../nn/params.ts";
import type { Policy } from "../policy/policy.ts";
import { readSnapshotFiles, snapshotFiles } from "../snapshots/peft.ts";
import { snapshotParams } from "../snapshots/snapshot-params.ts";
import { restoreState, stateFiles } from "../snapshots/state.ts";
import { Trainer } from "../trainer/trainer.ts";
import type { PolicyLocation, PolicyRegistry, RecordedObject, StoredRef } from "./registry.ts";

export interface SessionBacking {
  store: ObjectStore;
  registry: PolicyRegistry;
}

export interface CheckpointOptions {
  /** Take the name over from an existing checkpoint of the policy. */
  replace?: boolean;
  /** When the checkpoint may be deleted (null or absent: never). */
  expiresAt?: Date | null;
}

export interface SavedCheckpoint {
  /** The opaque state path a client hands back to restore it. */
  path: string;
  step: number;
}

export class PolicySession {
  private readonly trainer: Trainer;
  /** The snapshot calls last named as their KL reference, loaded. */
  private reference?: { handle: string; params: ModelParams };

  private constructor(
    readonly policy: Policy,
    readonly where: PolicyLocation,
    private readonly backing: SessionBacking,
  ) {
    this.trainer = new Trainer(policy);
  }

  /** A session over `policy`, restored from its newest checkpoint when it has one. */
  static async open(policy: Policy, where: PolicyLocation, backing: SessionBacking): Promise<PolicySession> {
    const session = new PolicySession(policy, where, backing);
    const latest = await backing.registry.latestCheckpoint(where);
    if (latest) await session.restoreFrom(latest);
    return session;
  }

  forward(data: Datum[], lossFn: LossFn, config?: Partial<LossFnConfig>): ForwardBackwardOutput {
    return this.trainer.forward(data, lossFn, config);
  }

  async forwardBackward(
    data: Datum[],
    lossFn: LossFn,
    config?: Partial<LossFnConfig>,
  ): Promise<ForwardBackwardOutput> {
    const reference = config?.referenceKl ? await this.referenceParams(config.referenceModel) : undefined;
    return this.trainer.forwardBackward(data, lossFn, config, reference);
  }

  /**
   * The weights of the snapshot a call names as its KL reference, resolved
   * within the policy's team (another team's unpublished one answers like a
   * missing one). Kept while calls name the same one: a snapshot never changes.
   */
  private async referenceParams(handle: string | undefined): Promise<ModelParams | undefined> {
    if (handle === undefined) return undefined;
    if (this.reference?.handle === handle) return this.reference.params;
    const what = `forwardBackward: lossFnConfig.referenceModel ${handle}`;
    const record = await this.backing.registry.findSnapshot(this.where, handle);
    if (!record) throw new RangeError(`${what}: no such snapshot`);
    const base = this.policy.base.name;
    if (record.baseModel !== undefined && record.baseModel !== base)
      throw new RangeError(`${what}: a snapshot over ${record.baseModel}, not this policy's base ${base}`);
    const files = await this.backing.store.get(record.path, record.checksum);
    const params = snapshotParams(this.policy.base, readSnapshotFiles(files, handle), handle);
    this.reference = { handle, params };
    return params;
  }

  async optimStep(adam?: AdamParamsInput): Promise<OptimStepOutput> {
    const output = this.trainer.optimStep(adam);
    await this.backing.registry.recordStep(this.where, this.policy.step);
    return output;
  }

  /** Publishes the weights as they are now as the policy's next immutable version. */
  async publish(jobId?: string, options: { expiresAt?: Date | null } = {}): Promise<SavedWeights> {
    const files = snapshotFiles(this.policy);
    return this.write("sampler", `step-${this.policy.step}`, files, jobId, (saved) =>
      this.backing.registry.publishSnapshot(this.where, saved, options),
    );
  }

  /**
   * Checkpoints weights, AdamW moments and step under a name unique to the
   * policy (`replace` takes the name over from an existing checkpoint, whose
   * object is deleted once the new one is recorded). The PEFT export of the
   * weights rides along, so a checkpoint's files load in PEFT as they are.
   */
  async checkpoint(name: string, jobId?: string, options: CheckpointOptions = {}): Promise<SavedCheckpoint> {
    const { registry, store } = this.backing;
    if (!options.replace && (await registry.hasCheckpoint(this.where, name)))
      throw new RangeError(
        `saveState: adapter ${this.where.adapter} already has a checkpoint named "${name}"`,
      );
    const files = new Map([...stateFiles(this.policy), ...snapshotFiles(this.policy)]);
    const replaced = await this.write("state", name, files, jobId, (saved) =>
      registry.recordCheckpoint(this.where, name, saved, options),
    );
    if (replaced) await store.delete(replaced).catch(() => {});
    return { path: this.statePath(name), step: this.policy.step };
  }

  /** What checkpoint returns for this policy's checkpoint `name`. */
  statePath(name: string): string {
    return formatStatePath({ team: this.where.team, adapter: this.where.adapter, name });
  }

  /**
   * Restores a checkpoint of this policy, or of another policy of its team (or
   * one another team publishes) with the same configuration, named by the path
   * checkpoint returned; with `optimizer: false` only the weights (AdamW starts over).
   */
  async restore(path: string, options: { optimizer?: boolean } = {}): Promise<void> {
    const state = parseStatePath(path);
    const { registry } = this.backing;
    const stored = !state
      ? null
      : state.team === this.where.team
        ? await registry.findCheckpoint({ ...this.where, adapter: state.adapter }, state.name)
        : await registry.findPublishedCheckpoint(state.team, state.adapter, state.name);
    if (!stored) throw new RangeError(`loadState: checkpoint ${path} not found`);
    await this.restoreFrom(stored, options);
    await this.backing.registry.recordStep(this.where, this.policy.step);
  }

  /** Its checksum verified; a mismatch changes nothing. */
  private async restoreFrom(stored: StoredRef, options: { optimizer?: boolean } = {}): Promise<void> {
    const files = await this.backing.store.get(stored.path, stored.checksum);
    restoreState(this.policy, files, stored.path, options);
  }

  /** Writes an object under a fresh key, then records it; a failed record deletes the object. */
  private async write<T>(
    kind: "sampler" | "state",
    name: string,
    files: Map<string, Uint8Array>,
    jobId: string | undefined,
    record: (saved: RecordedObject) => Promise<T>,
  ): Promise<T> {
    const { teamId, adapter } = this.where;
    const key = `${teamId}/${adapter}/${kind}/${name}-${randomBytes(4).toString("hex")}`;
    const stored = await this.backing.store.put(key, files);
    try {
      const saved = { stored, trainerStep: this.policy.step, baseModel: this.policy.base.name };
      return await record(jobId ? { ...saved, jobId } : saved);
    } catch (error) {
      await this.backing.store.delete(stored.path);
      throw error;
    }
  }
}
