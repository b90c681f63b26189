// Runs one named setting end to end with in-process clients: baseline
// validation, trainRl with periodic validation, then metrics JSONL, a summary
// and an SVG plot in the output directory.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { type BaseModel, InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import {
  ConsoleSink,
  evaluate,
  fanOut,
  JsonlSink,
  MemorySink,
  type MetricsSink,
  type RendererTokenizer,
  trainRl,
} from "@opentinker/sdk";
import { BUILT_IN_MODELS, DEFAULT_TEXT_MODEL } from "../registry.ts";
import { svgPlot } from "./plot.ts";
import { SETTINGS, type Setting } from "./settings.ts";

export interface ExperimentOptions {
  name: string;
  seed: number;
  steps: number;
  /**
   * A built-in model's name or a Hugging Face model directory (default: the
   * setting's model, else the built-in text model); "tiny-random" is a random
   * one-layer model that checks the wiring only.
   */
  model?: string;
  outDir: string;
  validateEvery?: number;
  quiet?: boolean;
}

export interface ExperimentSummary {
  setting: string;
  seed: number;
  steps: number;
  model: string;
  validationStart: number;
  validationEnd: number;
  seconds: number;
  files: { metrics: string; summary: string; plot: string };
}

export const TINY_RANDOM = "tiny-random";

async function baseFor(options: ExperimentOptions, s: Setting, scratch: string): Promise<BaseModel> {
  const model = options.model ?? s.model ?? DEFAULT_TEXT_MODEL;
  if (model === TINY_RANDOM) {
    const dir = path.join(scratch, "tiny-model");
    await writeTinyModel(dir, { ...TINY_MODEL, seed: 2 });
    return loadBaseModel(dir, TINY_RANDOM);
  }
  const builtIn = BUILT_IN_MODELS.find((m) => m.name === model);
  if (builtIn) return loadBaseModel(builtIn.dir, builtIn.name);
  return loadBaseModel(path.resolve(model), path.basename(model));
}

export function setting(name: string): Setting {
  const found = SETTINGS[name];
  if (!found) throw new RangeError(`unknown setting "${name}" (known: ${Object.keys(SETTINGS).join(", ")})`);
  return found;
}

export async function runExperiment(options: ExperimentOptions): Promise<ExperimentSummary> {
  const s = setting(options.name);
  const started = performance.now();
  const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-experiment-"));
  try {
    const base = await baseFor(options, s, scratch);
    if (!base.tokenizer) throw new Error(`${base.name} has no tokenizer`);
    const service = InProcessServiceClient.local([base], path.join(scratch, "snapshots"), "experiments");
    const ctx = { tokenizer: base.tokenizer as RendererTokenizer, seed: options.seed, steps: options.steps };
    const tc = await service.createLoraTrainingClient({ baseModel: base.name, rank: 16, seed: options.seed });
    const first = await (await tc.saveWeightsForSampler("start")).result();
    const baseline = await evaluate(
      { client: await tc.createSamplingClient(first.handle), version: first.version },
      s.validation(ctx),
      {
        seed: options.seed,
      },
    );
    await mkdir(options.outDir, { recursive: true });
    const files = {
      metrics: path.join(options.outDir, "metrics.jsonl"),
      summary: path.join(options.outDir, "summary.json"),
      plot: path.join(options.outDir, "plot.svg"),
    };
    await rm(files.metrics, { force: true });
    const memory = new MemorySink();
    const sinks: MetricsSink[] = [memory, new JsonlSink(files.metrics)];
    if (!options.quiet)
      sinks.push(new ConsoleSink({ total: options.steps, keys: ["reward/mean", "val/reward/mean"] }));
    const every = options.validateEvery ?? Math.max(1, Math.floor(options.steps / 4));
    await trainRl({
      trainingClient: tc,
      dataset: s.train(ctx),
      lossFn: s.lossFn,
      adam: { learningRate: s.learningRate },
      validation: { dataset: s.validation(ctx), every },
      sink: fanOut(...sinks),
      seed: options.seed,
    });
    const validationStart = baseline.metrics["val/reward/mean"] as number;
    const validated = memory.records.filter((r) => r["val/reward/mean"] !== undefined);
    const validationEnd =
      (validated[validated.length - 1]?.["val/reward/mean"] as number | undefined) ?? validationStart;
    const summary: ExperimentSummary = {
      setting: s.name,
      seed: options.seed,
      steps: options.steps,
      model: base.name,
      validationStart,
      validationEnd,
      seconds: Math.round((performance.now() - started) / 100) / 10,
      files,
    };
    await writeFile(files.summary, `${JSON.stringify(summary, null, 2)}\n`);
    const series = (key: string) =>
      memory.records
        .filter((r) => r[key] !== undefined)
        .map((r) => [r.step + 1, r[key] as number] as [number, number]);
    const plot = svgPlot(`${s.name} (seed ${options.seed})`, [
      { name: "reward", points: series("reward/mean") },
      { name: "validation", points: [[0, validationStart], ...series("val/reward/mean")] },
    ]);
    await writeFile(files.plot, plot);
    return summary;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
