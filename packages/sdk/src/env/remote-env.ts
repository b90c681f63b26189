// An environment served over HTTP (packages/protocol/src/remote-env.ts): each
// episode is a session on the remote server. A slow or failing server fails the
// trajectory (rollout isolates it), never the run.
import { ZRemoteResetResponse, ZRemoteStepResponse } from "@opentinker/protocol";
import type { z } from "zod";
import type { Env, RlDataset, StepResult } from "./types.ts";

const TIMEOUT_MS = 30_000;

async function post<T>(url: string, body: unknown, schema: z.ZodType<T>): Promise<T> {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(TIMEOUT_MS),
  });
  if (!response.ok)
    throw new Error(
      `remote environment ${url} answered ${response.status}: ${(await response.text()).slice(0, 200)}`,
    );
  const parsed = schema.safeParse(await response.json());
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`remote environment ${url}: ${issue?.path.join(".") || "response"}: ${issue?.message}`);
  }
  return parsed.data;
}

export interface RemoteTask {
  split: "train" | "validation";
  seed: number;
  index: number;
  config?: Record<string, unknown>;
}

export class RemoteEnv implements Env {
  private sessionId: string | null = null;

  constructor(
    private readonly baseUrl: string,
    private readonly task: RemoteTask,
  ) {}

  private endpoint(name: string): string {
    return `${this.baseUrl.replace(/\/+$/, "")}/${name}`;
  }

  async initialObservation() {
    const reset = await post(this.endpoint("reset"), { config: {}, ...this.task }, ZRemoteResetResponse);
    this.sessionId = reset.sessionId;
    return { observation: reset.observation, stop: reset.stop };
  }

  async step(action: number[]): Promise<StepResult> {
    if (!this.sessionId) throw new Error("remote environment: step before initialObservation");
    const result = await post(
      this.endpoint("step"),
      { sessionId: this.sessionId, action },
      ZRemoteStepResponse,
    );
    return {
      reward: result.reward,
      done: result.done,
      ...(result.nextObservation ? { nextObservation: result.nextObservation } : {}),
      ...(result.nextStop ? { nextStop: result.nextStop } : {}),
      ...(result.metrics ? { metrics: result.metrics } : {}),
    };
  }
}

/** Batches of groups of remote episodes; group g of batch b is task b·groupsPerBatch + g. */
export function remoteEnvDataset(
  url: string,
  o: {
    split: "train" | "validation";
    seed: number;
    batches: number;
    groupsPerBatch: number;
    groupSize: number;
    config?: Record<string, unknown>;
  },
): RlDataset {
  return {
    batches: o.batches,
    batch: (b) =>
      Array.from({ length: o.groupsPerBatch }, (_, g) => {
        const task: RemoteTask = {
          split: o.split,
          seed: o.seed,
          index: b * o.groupsPerBatch + g,
          ...(o.config ? { config: o.config } : {}),
        };
        return {
          tag: "remote",
          makeEnvs: async () => Array.from({ length: o.groupSize }, () => new RemoteEnv(url, task)),
        };
      }),
  };
}
