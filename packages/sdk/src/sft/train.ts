// The SFT loop: epochs of batches of datums through forwardBackward with
// cross-entropy, an optimizer step each batch, metrics to a sink, and a published
// snapshot at the end.
import {
  type AdamParamsInput,
  type ApiFuture,
  type Datum,
  divergedAt,
  type ForwardBackwardOutput,
  type LossFnConfig,
  type OptimStepOutput,
  type TrainingClient,
} from "@opentinker/protocol";
import type { MetricsRecord, MetricsSink } from "../metrics/sink.ts";

export interface TrainSftConfig {
  trainingClient: TrainingClient;
  data: Datum[];
  epochs?: number;
  batchSize?: number;
  adam?: AdamParamsInput;
  /** Passed to every forwardBackward (e.g. referenceKl: a KL to the base that SFT must not stray far from). */
  lossFnConfig?: Partial<LossFnConfig>;
  /** Datums to report the loss on (forward only) after every epoch. */
  validation?: Datum[];
  sink?: MetricsSink;
  /** Resume at this step (the training client already holds the state it reached). */
  startStep?: number;
  /** Called after each step, and awaited (a server stores the metrics and checkpoints). */
  onStep?: (record: MetricsRecord) => Promise<void>;
  /** Asked before each step; true ends the run early. */
  shouldStop?: () => boolean | Promise<boolean>;
}

/** Steps in an SFT run: one per batch per epoch. */
export function sftSteps(config: Pick<TrainSftConfig, "data" | "epochs" | "batchSize">): number {
  return (config.epochs ?? 1) * Math.ceil(config.data.length / (config.batchSize ?? 8));
}

/** Both results' metrics, the forwardBackward's error first when it failed. */
async function stepMetrics(fb: ApiFuture<ForwardBackwardOutput>, opt: ApiFuture<OptimStepOutput>) {
  return { ...(await fb.result()).metrics, ...(await opt.result()).metrics };
}

export async function trainSft(
  config: TrainSftConfig,
): Promise<{ history: MetricsRecord[]; handle: string | null }> {
  const tc = config.trainingClient;
  const batchSize = config.batchSize ?? 8;
  const history: MetricsRecord[] = [];
  let step = 0;
  for (let epoch = 0; epoch < (config.epochs ?? 1); epoch++) {
    for (let start = 0; start < config.data.length; start += batchSize, step++) {
      if (step < (config.startStep ?? 0)) continue;
      if (await config.shouldStop?.()) return { history, handle: null };
      // Queued back to back; results are collected after both are accepted.
      const batch = config.data.slice(start, start + batchSize);
      const fb = await tc.forwardBackward(batch, "cross_entropy", config.lossFnConfig);
      const opt = await tc.optimStep(config.adam);
      // A non-finite loss or gradient norm changed nothing: the run ends here as diverged.
      const metrics = await stepMetrics(fb, opt).catch((error: unknown) => {
        throw divergedAt(step, error);
      });
      const record: MetricsRecord = { step, epoch };
      for (const [k, v] of Object.entries(metrics)) record[k.replace(":", "/")] = v;
      if (config.validation && start + batchSize >= config.data.length) {
        const val = await (await tc.forward(config.validation, "cross_entropy")).result();
        record["val/loss/mean"] = val.metrics["loss:mean"] as number;
      }
      await config.onStep?.(record);
      config.sink?.write(record);
      history.push(record);
    }
  }
  const saved = await (await tc.saveWeightsForSampler("sft")).result();
  return { history, handle: saved.handle };
}
