// Runs one named setting end to end with in-process clients: baseline
// validation, an optional SFT phase, trainRl with periodic validation, then
// metrics JSONL, a summary and an SVG plot in the output directory. A pair
// setting trains two adapters at once over one base, then retrains the first
// alone and checks that it came out byte-identical.
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  type AddonInfo,
  type BaseModel,
  InProcessServiceClient,
  loadBaseModel,
  machineInfo,
} from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import {
  ConsoleSink,
  fanOut,
  JsonlSink,
  MemorySink,
  type MetricsRecord,
  type MetricsSink,
  type RendererTokenizer,
} from "@opentinker/sdk";
import { BUILT_IN_MODELS, DEFAULT_TEXT_MODEL } from "../registry.ts";
import type { MalformedInput } from "./malformed-inputs.ts";
import { svgPlot } from "./plot.ts";
import { PAIR_SETTINGS, type PairSetting, SETTINGS, type Setting } from "./settings.ts";
import { type BestSnapshot, type SettingOverrides, type SettingRun, trainSetting } from "./train-setting.ts";

export interface ExperimentOptions extends SettingOverrides {
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
  quiet?: boolean;
}

/** What one trained policy reached; `metric` names the validation figure. */
export interface RunSummary {
  setting: string;
  metric: string;
  /** The start and end figures are each measured on `checkEpisodes` validation episodes. */
  validationStart: number;
  /** After the SFT phase, for settings that have one. */
  validationAfterSft?: number;
  validationEnd: number;
  /** Malformed or illegal actions in validation, at the start and the end. */
  malformedStart: number;
  malformedEnd: number;
  /** After the SFT phase, for settings that have one: what RL starts from. */
  malformedAfterSft?: number;
  /** Validation episodes behind each of the start and end figures. */
  checkEpisodes: number;
  /** The inputs with the most malformed actions in the start and end checks (older summaries lack it). */
  malformedInputs?: { start: MalformedInput[]; end: MalformedInput[] };
  /** Every validation metric at the start and the end (the reward, the environments' own metrics). */
  validationMetrics: { start: Record<string, number>; end: Record<string, number> };
  /** Further evaluations (start and end). */
  evaluations?: Record<string, { start: number; end: number }>;
  /** sha256 of the final weights and optimizer moments, and of the last published snapshot. */
  stateSha256: string;
  snapshotChecksum: string;
  /** The best validated snapshot (start, every validation, end), kept as files in `best/`. */
  best: BestSnapshot;
  /** A pair's member: the steps it ran, its own setting's (the pair's summary has the longer). */
  steps?: number;
}

export interface ExperimentSummary extends RunSummary {
  seed: number;
  steps: number;
  model: string;
  /** What the run changed of its setting (`--lr`, `--grad-clip`, …); empty for the setting as it is. */
  overrides: SettingOverrides;
  seconds: number;
  /** Where it ran: results differ by CPU and by which kernels did the GEMMs (ours or OpenBLAS). */
  machine: { cpu: string; kernels: AddonInfo };
  /** Pair settings: each adapter's result, and whether the first matched its solo rerun. */
  members?: RunSummary[];
  isolation?: {
    aloneStateSha256: string;
    aloneSnapshotChecksum: string;
    identical: boolean;
    /** The solo rerun's wall time: the check, within `seconds` but not part of training the pair (older summaries lack it). */
    seconds?: number;
  };
  files: {
    metrics: string;
    summary: string;
    plot: string;
    best: string[];
    /** The snapshots the end check measured, one per adapter as `best`. */
    end: string[];
    memberMetrics?: string[];
  };
}

/** The CPU and the kernels that did the GEMMs (machineInfo's, without its load and library paths). */
function whereItRan(): ExperimentSummary["machine"] {
  const { cpu, kernels } = machineInfo();
  return { cpu, kernels };
}

/** Writes a snapshot's files in `dir` (what `loadBaseModel`/PEFT tools read). */
async function writeSnapshot(files: Map<string, Uint8Array>, dir: string): Promise<string> {
  await rm(dir, { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
  for (const [name, bytes] of files) await writeFile(path.join(dir, name), bytes);
  return dir;
}

/** A run's best snapshot in `<out>/best<suffix>/` and its end snapshot in `<out>/end<suffix>/`. */
const keepSnapshots = async (run: SettingRun, outDir: string, suffix = "") => ({
  best: await writeSnapshot(run.bestFiles, path.join(outDir, `best${suffix}`)),
  end: await writeSnapshot(run.endFiles, path.join(outDir, `end${suffix}`)),
});

export const TINY_RANDOM = "tiny-random";

async function loadBase(options: ExperimentOptions, defaultModel: string | undefined, scratch: string) {
  return loadExperimentModel(options.model ?? defaultModel ?? DEFAULT_TEXT_MODEL, scratch);
}

/** A built-in model by name, a Hugging Face model directory, or the random wiring model (written under `scratch`). */
export async function loadExperimentModel(model: string, scratch: string): Promise<BaseModel> {
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
  if (!found) throw new RangeError(`unknown setting "${name}" (known: ${settingNames().join(", ")})`);
  return found;
}

export const settingNames = () => [...Object.keys(SETTINGS), ...Object.keys(PAIR_SETTINGS)];

const series = (records: MetricsRecord[], key: string, offset = 1) =>
  records
    .filter((r) => r[key] !== undefined)
    .map((r) => [r.step + offset, r[key] as number] as [number, number]);

function plotSeries(label: string, run: SettingRun, plotted: readonly string[] = []) {
  const prefix = label ? `${label} ` : "";
  const validation = run.validationAfterSft === undefined ? run.validationStart : run.validationAfterSft;
  const start = run.summary.validationMetrics.start;
  return [
    { name: `${prefix}reward`, points: series(run.records, "reward/mean") },
    { name: `${prefix}validation`, points: [[0, validation], ...series(run.records, `val/${run.metric}`)] },
    ...plotted.map((key) => ({
      name: `${prefix}${key.replace(/^env\//, "")}`,
      points: [[0, start[`val/${key}`] ?? 0], ...series(run.records, `val/${key}`)],
    })),
  ] as { name: string; points: [number, number][] }[];
}

function sinksFor(file: string, steps: number, run: { quiet?: boolean; metric: string }): MetricsSink[] {
  const sinks: MetricsSink[] = [new JsonlSink(file)];
  if (!run.quiet) sinks.push(new ConsoleSink({ total: steps, keys: ["reward/mean", `val/${run.metric}`] }));
  return sinks;
}

/** Wall seconds since `started` (a performance.now() reading), to a tenth. */
const secondsSince = (started: number) => Math.round((performance.now() - started) / 100) / 10;

export async function runExperiment(options: ExperimentOptions): Promise<ExperimentSummary> {
  const pair = PAIR_SETTINGS[options.name];
  const single = pair ? undefined : setting(options.name);
  const started = performance.now();
  const scratch = await mkdtemp(path.join(tmpdir(), "opentinker-experiment-"));
  try {
    const first = single ?? setting((pair as PairSetting).pair[0]);
    const base = await loadBase(options, first.model, scratch);
    if (!base.tokenizer) throw new Error(`${base.name} has no tokenizer`);
    await mkdir(options.outDir, { recursive: true });
    const files = {
      metrics: path.join(options.outDir, "metrics.jsonl"),
      summary: path.join(options.outDir, "summary.json"),
      plot: path.join(options.outDir, "plot.svg"),
    };
    const common = { base, options, scratch };
    const result = pair ? await runPair(pair, common, files) : await runSingle(first, common, files);
    const summary: ExperimentSummary = {
      ...result.summary,
      seed: options.seed,
      steps: options.steps,
      model: base.name,
      overrides: overridesOf(options),
      seconds: secondsSince(started),
      machine: whereItRan(),
      files: { ...files, ...result.files },
    };
    await writeFile(files.summary, `${JSON.stringify(summary, null, 2)}\n`);
    await writeFile(files.plot, svgPlot(`${options.name} (seed ${options.seed})`, result.plot));
    return summary;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

interface Common {
  base: BaseModel;
  options: ExperimentOptions;
  scratch: string;
}

const service = (c: Common, name: string) =>
  InProcessServiceClient.local([c.base], path.join(c.scratch, name), "experiments");

/** What the options change of the setting, without the run's identity (name, seed, steps, model, files). */
function overridesOf(options: ExperimentOptions): SettingOverrides {
  const { name: _n, seed: _s, steps: _t, model: _m, outDir: _o, quiet: _q, ...overrides } = options;
  return Object.fromEntries(Object.entries(overrides).filter(([, v]) => v !== undefined));
}

function train(
  c: Common,
  svc: InProcessServiceClient,
  s: Setting,
  sink: MetricsSink,
  steps = c.options.steps,
) {
  return trainSetting(svc, s, {
    ...overridesOf(c.options),
    baseModel: c.base.name,
    tokenizer: c.base.tokenizer as RendererTokenizer,
    seed: c.options.seed,
    steps,
    sink,
  });
}

async function runSingle(s: Setting, c: Common, files: { metrics: string }) {
  await rm(files.metrics, { force: true });
  const metric = s.metric ?? "reward/mean";
  const sinks = sinksFor(files.metrics, c.options.steps, { quiet: c.options.quiet ?? false, metric });
  const run = await train(c, service(c, "snapshots"), s, fanOut(...sinks));
  const { best, end } = await keepSnapshots(run, c.options.outDir);
  return { summary: run.summary, plot: plotSeries("", run, s.plotted), files: { best: [best], end: [end] } };
}

/** Both adapters at once over one base and sampler, then the first alone on a fresh service. */
async function runPair(pair: PairSetting, c: Common, files: { metrics: string }) {
  // One metrics file per adapter: metrics-<setting>.jsonl.
  const [a, b] = pair.pair.map(setting) as [Setting, Setting];
  // Each runs its own setting's length (as alone), shortened by the run's --steps.
  const stepsOf = (s: Setting) => Math.min(s.steps, c.options.steps);
  const metricsOf = (s: Setting) => files.metrics.replace(/\.jsonl$/, `-${s.name}.jsonl`);
  const sinkOf = async (s: Setting, quiet: boolean) => {
    await rm(metricsOf(s), { force: true });
    const metric = s.metric ?? "reward/mean";
    return fanOut(...sinksFor(metricsOf(s), stepsOf(s), { quiet, metric }));
  };
  const shared = service(c, "shared");
  const quiet = c.options.quiet ?? false;
  const [runA, runB] = await Promise.all([
    train(c, shared, a, await sinkOf(a, quiet), stepsOf(a)),
    train(c, shared, b, await sinkOf(b, true), stepsOf(b)),
  ]);
  const aloneStarted = performance.now();
  const alone = await train(c, service(c, "alone"), a, new MemorySink(), stepsOf(a));
  const aloneSeconds = secondsSince(aloneStarted);
  const keptA = await keepSnapshots(runA, c.options.outDir, `-${a.name}`);
  const keptB = await keepSnapshots(runB, c.options.outDir, `-${b.name}`);
  const identical =
    alone.summary.stateSha256 === runA.summary.stateSha256 &&
    alone.summary.snapshotChecksum === runA.summary.snapshotChecksum;
  return {
    summary: {
      ...runA.summary,
      setting: pair.name,
      members: [
        { ...runA.summary, steps: stepsOf(a) },
        { ...runB.summary, steps: stepsOf(b) },
      ],
      isolation: {
        aloneStateSha256: alone.summary.stateSha256,
        aloneSnapshotChecksum: alone.summary.snapshotChecksum,
        identical,
        seconds: aloneSeconds,
      },
    },
    files: {
      metrics: metricsOf(a),
      memberMetrics: [metricsOf(a), metricsOf(b)],
      best: [keptA.best, keptB.best],
      end: [keptA.end, keptB.end],
    },
    plot: [
      ...plotSeries(a.name.split("-")[0] as string, runA),
      ...plotSeries(b.name.split("-")[0] as string, runB),
    ],
  };
}
