// Tinker's request shapes as our API's inputs, and our results as Tinker's JSON
// shapes. Only names and layouts change here; every check of the values is our
// own schemas' and procedures', so both fronts refuse the same calls.
import type {
  AdamParamsInput,
  ForwardBackwardOutput,
  LossFn,
  ModelInput,
  SampleResponse,
  SamplingParamsInput,
  TensorData,
} from "@opentinker/protocol";
import type { TinkerDatum, TinkerSampleBody } from "./schemas.ts";
import { snakeCase } from "./wire.ts";

/** A refusal of a Tinker call: its HTTP status and the message naming what was wrong. */
export class TinkerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const badRequest = (message: string): never => {
  throw new TinkerError(400, message);
};

const LOSSES: Record<string, LossFn> = {
  cross_entropy: "cross_entropy",
  importance_sampling: "importance_sampling",
  ppo: "ppo",
  cispo: "cispo",
  dro: "dro",
};

/** Tinker's loss-input names and ours. */
const INPUT_NAMES: Record<string, string> = {
  target_tokens: "targetTokens",
  weights: "weights",
  logprobs: "logprobs",
  advantages: "advantages",
  mask: "mask",
};

const CONFIG_NAMES: Record<string, string> = {
  clip_low_threshold: "clipLowThreshold",
  clip_high_threshold: "clipHighThreshold",
  beta: "beta",
  reference_kl: "referenceKl",
};

function modelInput(chunks: TinkerDatum["model_input"]["chunks"], at: string): ModelInput {
  return {
    chunks: chunks.map((c, i) => {
      if (c.type === "encoded_text") return { type: "encoded_text", tokens: c.tokens };
      if (c.expected_tokens == null) badRequest(`${at}.chunks.${i}.expected_tokens: required for an image`);
      if (c.format !== "png" && c.format !== "jpeg")
        badRequest(`${at}.chunks.${i}.format: "${c.format}" (use png or jpeg)`);
      return {
        type: "image",
        format: c.format as "png" | "jpeg",
        data: c.data,
        expectedTokens: c.expected_tokens as number,
      };
    }),
  };
}

const tensor = (t: TinkerDatum["loss_fn_inputs"][string]): TensorData => ({
  dtype: t.dtype,
  data: t.data,
  ...(t.shape ? { shape: t.shape } : {}),
});

/**
 * A forward/backward input as ours. Tinker's RL losses (importance sampling,
 * PPO, CISPO, DRO) count every target position (a zero advantage adds nothing), so the
 * explicit mask they lack is all ones, never inferred from the advantages.
 */
export function forwardInput(
  adapterId: string,
  input: { data: TinkerDatum[]; loss_fn: string; loss_fn_config?: Record<string, number> | null },
) {
  const lossFn = LOSSES[input.loss_fn];
  if (!lossFn)
    badRequest(`loss_fn: "${input.loss_fn}" is not supported (use ${Object.keys(LOSSES).join(", ")})`);
  const data = input.data.map((d, i) => {
    const lossFnInputs: Record<string, TensorData> = {};
    for (const [name, t] of Object.entries(d.loss_fn_inputs)) {
      const ours = INPUT_NAMES[name];
      if (!ours) badRequest(`data.${i}.loss_fn_inputs.${name}: not an input of any supported loss`);
      lossFnInputs[ours as string] = tensor(t);
    }
    const targets = lossFnInputs.targetTokens;
    if (lossFn !== "cross_entropy" && targets && !lossFnInputs.mask)
      lossFnInputs.mask = { dtype: "float32", shape: targets.shape, data: targets.data.map(() => 1) };
    return { modelInput: modelInput(d.model_input.chunks, `data.${i}.model_input`), lossFnInputs };
  });
  const config = Object.entries(input.loss_fn_config ?? {}).map(([k, v]) => {
    const ours = CONFIG_NAMES[k];
    if (!ours) badRequest(`loss_fn_config.${k}: not a setting of ${input.loss_fn}`);
    return [ours as string, v] as const;
  });
  return {
    adapterId,
    data,
    lossFn: lossFn as LossFn,
    ...(config.length > 0 ? { lossFnConfig: Object.fromEntries(config) } : {}),
  };
}

export function adamParams(p: {
  learning_rate?: number | undefined;
  beta1?: number | undefined;
  beta2?: number | undefined;
  eps?: number | undefined;
  weight_decay?: number | undefined;
  grad_clip_norm?: number | undefined;
}): AdamParamsInput {
  const pick = { learningRate: p.learning_rate, beta1: p.beta1, beta2: p.beta2, eps: p.eps };
  const rest = { weightDecay: p.weight_decay, gradClipNorm: p.grad_clip_norm };
  return Object.fromEntries(Object.entries({ ...pick, ...rest }).filter(([, v]) => v !== undefined));
}

export function samplingParams(p: TinkerSampleBody["sampling_params"]): SamplingParamsInput {
  if (p.max_tokens == null) badRequest("sampling_params.max_tokens: required");
  const stop = p.stop == null ? [] : typeof p.stop === "string" ? [p.stop] : p.stop;
  return {
    maxTokens: p.max_tokens as number,
    temperature: p.temperature,
    topK: p.top_k,
    topP: p.top_p,
    ...(p.seed != null ? { seed: p.seed } : {}),
    stop,
  };
}

export const samplePrompt = (body: TinkerSampleBody): ModelInput => modelInput(body.prompt.chunks, "prompt");

/** Our tensor as Tinker's JSON TensorData. */
const tinkerTensor = (t: TensorData) => ({ data: t.data, dtype: t.dtype, shape: t.shape ?? [t.data.length] });

/** 0.24's JSON forward/backward result. */
export const forwardBackwardJson = (output: ForwardBackwardOutput) => ({
  loss_fn_output_type: "ArrayRecord",
  loss_fn_outputs: output.lossFnOutputs.map((o) =>
    Object.fromEntries(Object.entries(o).map(([k, t]) => [snakeCase(k), tinkerTensor(t)])),
  ),
  metrics: output.metrics,
});

/** 0.24's JSON sampling result. */
export const sampleJson = (response: SampleResponse) => ({
  type: "sample",
  sequences: response.sequences.map((s) => ({
    tokens: s.tokens,
    logprobs: s.logprobs,
    stop_reason: s.stopReason,
  })),
  prompt_logprobs: response.promptLogprobs ?? null,
  topk_prompt_logprobs: response.topkPromptLogprobs ?? null,
});

/** The SDK reads user metadata as strings; other JSON values are sent as their JSON text. */
export function stringMetadata(value: unknown): Record<string, string> | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return null;
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [k, typeof v === "string" ? v : JSON.stringify(v)]),
  );
}
