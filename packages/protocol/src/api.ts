// Payloads of the service API (issue: control plane): what the web process
// validates, stores in a Request row and a worker parses again before running it.
import { z } from "zod";
import { ZDatum } from "./datum.ts";
import { ZObjectName, ZPolicyRef, ZStatePath } from "./handles.ts";
import {
  ZAdamParams,
  ZForwardBackwardOutput,
  ZLossFn,
  ZLossFnConfigInput,
  ZOptimStepOutput,
} from "./losses.ts";
import { ZModelInput } from "./model-input.ts";
import { idRequest } from "./resources.ts";
import { ZPromptLogprobsOptions, ZSampleResponse, ZSamplingParams } from "./sampling.ts";

const ZId = z.string().min(1).max(64);

export const ZForwardInput = z.object({
  adapterId: ZId,
  data: z.array(ZDatum).min(1, "needs at least one datum").max(4096),
  lossFn: ZLossFn,
  lossFnConfig: ZLossFnConfigInput.optional(),
});
export type ForwardInput = z.infer<typeof ZForwardInput>;

export const ZOptimStepInput = z.object({
  adapterId: ZId,
  adam: ZAdamParams.partial().optional(),
});

/** The longest a saved state may be kept by a TTL (ten years); no TTL keeps it until deleted. */
export const MAX_TTL_SECONDS = 10 * 365 * 24 * 3600;

export const ZSaveWeightsInput = z.object({
  adapterId: ZId,
  name: ZObjectName.default("sampler"),
  /** Delete the snapshot this many seconds after it is published; absent: keep it until deleted. */
  ttlSeconds: z.number().int().positive().max(MAX_TTL_SECONDS).optional(),
});
export const ZSaveStateInput = z.object({
  adapterId: ZId,
  name: ZObjectName,
  /** Take the name over from the adapter's checkpoint of that name (else a second save of a name is a 409). */
  replace: z.boolean().default(false),
  /** Delete it this many seconds after it is saved; absent: keep it until deleted. */
  ttlSeconds: z.number().int().positive().max(MAX_TTL_SECONDS).optional(),
});
export const ZLoadStateInput = z.object({
  adapterId: ZId,
  /** A checkpoint of this adapter, or of another adapter of the team with the same configuration. */
  path: ZStatePath,
  /** false: load the weights only, and start AdamW over. */
  optimizer: z.boolean().default(true),
});

/** Ends the adapter's training: saved checkpoints and snapshots stay, its live state is dropped. */
export const ZUnloadInput = z.object({ adapterId: ZId });

export const ZSampleInput = z.object({
  policy: ZPolicyRef,
  prompt: ZModelInput,
  numSamples: z.number().int().min(1).max(256).default(1),
  params: ZSamplingParams,
  /** promptLogprobs and topkPromptLogprobs: scores of the prompt itself, computed once for all samples. */
  ...ZPromptLogprobsOptions.shape,
});
export type SampleInput = z.infer<typeof ZSampleInput>;

export const ZComputeLogprobsInput = z.object({ policy: ZPolicyRef, sequence: ZModelInput });

export const ZSavedWeightsOutput = z.object({ handle: z.string(), version: z.number().int().positive() });
export const ZSavedStateOutput = z.object({ path: z.string() });
export const ZLogprobsOutput = z.array(z.number().nullable());

export const ZFutureStatus = z.enum(["QUEUED", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"]);

export const ZFutureState = z.object({
  requestId: z.string(),
  kind: z.string(),
  status: ZFutureStatus,
  output: z.unknown().nullable(),
  error: z.string().nullable(),
});
export type FutureState = z.infer<typeof ZFutureState>;

export const ZFutureIdRequest = idRequest("requestId");

/** The longest a single wait call holds the connection; clients wait again. */
export const MAX_FUTURE_WAIT_MS = 60_000;

export const ZWaitFutureRequest = ZFutureIdRequest.extend({
  timeoutMs: z.number().int().min(0).max(MAX_FUTURE_WAIT_MS).default(30_000),
});

/**
 * Optional on every call: wait up to this long for the result before
 * answering, saving the separate wait round trip (the call is still accepted
 * and ordered first; a result not ready by then is waited for as usual).
 */
export const ZWaitMs = z.number().int().min(0).max(60_000).optional();

/** What an accepted call returns at once: the future to wait on. */
export const ZFutureRef = z.object({
  requestId: z.string(),
  /** The call's place in its adapter's order (null for sampling calls, which are unordered). */
  seq: z.number().int().positive().nullable(),
  /** With waitMs: the finished call's state, when it finished within that time. */
  result: ZFutureState.optional(),
});
export type FutureRef = z.infer<typeof ZFutureRef>;

/** Output schema of each request kind, for clients that parse a future's result. */
export const REQUEST_OUTPUTS = {
  FORWARD: ZForwardBackwardOutput,
  FORWARD_BACKWARD: ZForwardBackwardOutput,
  OPTIM_STEP: ZOptimStepOutput,
  SAVE_WEIGHTS_FOR_SAMPLER: ZSavedWeightsOutput,
  SAVE_STATE: ZSavedStateOutput,
  LOAD_STATE: z.null(),
  UNLOAD: z.null(),
  RELEASE: z.null(),
  SAMPLE: ZSampleResponse,
  COMPUTE_LOGPROBS: ZLogprobsOutput,
} as const;
