// A frozen base model shared by every policy over it: config, weights, RoPE
// frequencies, (when loaded from a directory) its tokenizer, and the backend
// its forward passes run on.
import { type Backend, CpuBackend, type RopeFrequencies } from "@opentinker/kernels";
import {
  type HfModel,
  type LoadModelOptions,
  loadHfModel,
  type ModelConfig,
  type ModelWeights,
  ropeFrequencies,
  type TextTokenizer,
} from "./model/index.ts";

export interface BaseModel {
  name: string;
  config: ModelConfig;
  /** The weights as read (host arrays); frozenParams holds them on the backend. */
  weights: ModelWeights;
  rope: RopeFrequencies;
  /** Where this model's weights live and its ops run; policies over it share it. */
  backend: Backend;
  tokenizer?: TextTokenizer;
  dir?: string;
}

/** What a model runs on unless it is given another: the process's CPU backend. */
let fallback: Backend | undefined;
export function defaultBackend(): Backend {
  fallback ??= new CpuBackend();
  return fallback;
}

/** Makes `backend` the default (the strict test project runs the engine's suites on the strict backend this way). */
export function setDefaultBackend(backend: Backend): void {
  fallback = backend;
}

export function baseModelFrom(
  name: string,
  model: Pick<HfModel, "config" | "weights"> & Partial<HfModel>,
  backend: Backend = defaultBackend(),
): BaseModel {
  return {
    name,
    config: model.config,
    weights: model.weights,
    rope: ropeFrequencies(model.config),
    backend,
    tokenizer: model.tokenizer,
    dir: model.dir,
  };
}

export interface LoadBaseModelOptions extends LoadModelOptions {
  /** Where the model runs (default: the CPU). */
  backend?: Backend;
}

/**
 * Loads a local Hugging Face directory as a base model (nothing is fetched); its
 * matrices in OPENTINKER_WEIGHT_DTYPE unless `options` says otherwise.
 */
export async function loadBaseModel(
  dir: string,
  name = dir,
  options: LoadBaseModelOptions = {},
): Promise<BaseModel> {
  return baseModelFrom(name, await loadHfModel(dir, options), options.backend);
}
