// One adapter's mutable training state on this worker (C1), and the calls that
// change it. Every call that must survive the worker (snapshots, checkpoints,
// the trainer step) is written to Postgres before it returns.
import { randomBytes } from "node:crypto";
import { publishSnapshot } from "@opentinker/db";
import {
  createFullPolicy,
  createLoraPolicy,
  type Policy,
  restoreState,
  snapshotFiles,
  stateFiles,
  Trainer,
} from "@opentinker/engine";
import {
  type AdamParamsInput,
  type Datum,
  type ForwardBackwardOutput,
  formatStatePath,
  type LossFn,
  type LossFnConfig,
  type OptimStepOutput,
  parseStatePath,
} from "@opentinker/protocol";
import type { EngineHost } from "./engine-host.ts";

export interface AdapterRow {
  id: string;
  teamId: string;
  baseModelId: string;
  kind: "LORA" | "FULL";
  rank: number | null;
  alpha: number | null;
  trainAttn: boolean;
  trainMlp: boolean;
  trainUnembed: boolean;
  seed: number;
  team: { slug: string };
}

export class AdapterSession {
  private readonly trainer: Trainer;

  private constructor(
    private readonly host: EngineHost,
    readonly adapter: AdapterRow,
    readonly policy: Policy,
  ) {
    this.trainer = new Trainer(policy);
  }

  static async open(host: EngineHost, teamId: string, adapterId: string): Promise<AdapterSession> {
    const adapter = await host.db.adapter.findFirst({
      where: { id: adapterId, teamId },
      include: { team: { select: { slug: true } } },
    });
    if (!adapter) throw new RangeError(`adapter ${adapterId} not found`);
    const base = host.base(adapter.baseModelId).model;
    const policy =
      adapter.kind === "FULL"
        ? createFullPolicy(base)
        : createLoraPolicy(base, {
            rank: adapter.rank ?? 8,
            alpha: adapter.alpha ?? 32,
            trainAttn: adapter.trainAttn,
            trainMlp: adapter.trainMlp,
            trainUnembed: adapter.trainUnembed,
            seed: adapter.seed,
          });
    const session = new AdapterSession(host, adapter, policy);
    const last = await host.db.checkpoint.findFirst({
      where: { teamId, adapterId },
      orderBy: [{ step: "desc" }, { createdAt: "desc" }],
    });
    if (last) await session.restore(last);
    return session;
  }

  private async restore(checkpoint: { path: string; checksum: string }): Promise<void> {
    restoreState(
      this.policy,
      await this.host.store.get(checkpoint.path, checkpoint.checksum),
      checkpoint.path,
    );
  }

  forward(data: Datum[], lossFn: LossFn, config?: Partial<LossFnConfig>): ForwardBackwardOutput {
    return this.trainer.forward(data, lossFn, config);
  }

  forwardBackward(data: Datum[], lossFn: LossFn, config?: Partial<LossFnConfig>): ForwardBackwardOutput {
    return this.trainer.forwardBackward(data, lossFn, config);
  }

  async optimStep(adam?: AdamParamsInput): Promise<OptimStepOutput> {
    const output = this.trainer.optimStep(adam);
    await this.host.db.adapter.update({ where: { id: this.adapter.id }, data: { step: this.policy.step } });
    return output;
  }

  private key(kind: string, name: string): string {
    return `${this.adapter.teamId}/${this.adapter.id}/${kind}/${name}-${randomBytes(4).toString("hex")}`;
  }

  /** Publishes the weights as they are now as the adapter's next immutable version. */
  async saveWeightsForSampler(jobId?: string): Promise<{ handle: string; version: number }> {
    const stored = await this.host.store.put(
      this.key("sampler", `step-${this.policy.step}`),
      snapshotFiles(this.policy),
    );
    try {
      const row = await publishSnapshot(this.host.db, this.adapter.teamId, {
        adapterId: this.adapter.id,
        path: stored.path,
        checksum: stored.checksum,
        trainerStep: this.policy.step,
        ...(jobId ? { jobId } : {}),
      });
      return { handle: row.handle, version: row.version };
    } catch (error) {
      await this.host.store.delete(stored.path); // nothing half-published
      throw error;
    }
  }

  /** Checkpoints weights, AdamW moments and step under a name unique to the adapter. */
  async saveState(name: string, jobId?: string): Promise<{ path: string; step: number }> {
    const existing = await this.host.db.checkpoint.findUnique({
      where: { adapterId_name: { adapterId: this.adapter.id, name } },
      select: { id: true },
    });
    if (existing)
      throw new RangeError(`saveState: adapter ${this.adapter.id} already has a checkpoint named "${name}"`);
    const stored = await this.host.store.put(this.key("state", name), stateFiles(this.policy));
    try {
      await this.host.db.checkpoint.create({
        data: {
          teamId: this.adapter.teamId,
          adapterId: this.adapter.id,
          jobId: jobId ?? null,
          name,
          step: this.policy.step,
          path: stored.path,
          checksum: stored.checksum,
          sizeBytes: BigInt(stored.sizeBytes),
        },
      });
    } catch (error) {
      await this.host.store.delete(stored.path);
      throw error;
    }
    return { path: this.statePath(name), step: this.policy.step };
  }

  /** What saveState returns for a checkpoint of this adapter. */
  statePath(name: string): string {
    return formatStatePath({ team: this.adapter.team.slug, adapter: this.adapter.id, name });
  }

  /** Restores a checkpoint of this adapter, named by the path saveState returned. */
  async loadState(path: string): Promise<void> {
    const state = parseStatePath(path);
    const own = state?.team === this.adapter.team.slug && state.adapter === this.adapter.id;
    const checkpoint = own
      ? await this.host.db.checkpoint.findFirst({
          where: { teamId: this.adapter.teamId, adapterId: this.adapter.id, name: state.name },
        })
      : null;
    if (!checkpoint) throw new RangeError(`loadState: checkpoint ${path} not found`);
    await this.restore(checkpoint);
    await this.host.db.adapter.update({ where: { id: this.adapter.id }, data: { step: this.policy.step } });
  }
}
