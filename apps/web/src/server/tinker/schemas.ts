// The JSON bodies of the Tinker protocol (snake_case, as the SDK sends them).
// Unknown fields (the SDK's `type` tags, newer options) are dropped; what we
// read is checked here, and again by our own schemas after conversion.
import { z } from "zod";

const ZTensor = z.object({
  data: z.array(z.number()),
  dtype: z.enum(["float32", "int64"]),
  shape: z.array(z.number().int().nonnegative()).nullish(),
});

const ZChunk = z.discriminatedUnion("type", [
  z.object({ type: z.literal("encoded_text"), tokens: z.array(z.number().int()) }),
  z.object({
    type: z.literal("image"),
    data: z.string(),
    format: z.string(),
    expected_tokens: z.number().int().nullish(),
  }),
]);

const ZModelInput = z.object({ chunks: z.array(ZChunk) });

const ZDatum = z.object({ model_input: ZModelInput, loss_fn_inputs: z.record(z.string(), ZTensor) });
export type TinkerDatum = z.infer<typeof ZDatum>;

const ZForwardBackwardInput = z.object({
  data: z.array(ZDatum),
  loss_fn: z.string(),
  loss_fn_config: z.record(z.string(), z.number()).nullish(),
});

const ZModelId = z.string().min(1).max(64);
const ZSeqId = z.number().int().positive().nullish();

export const ZForwardBackwardBody = z.object({
  model_id: ZModelId,
  seq_id: ZSeqId,
  forward_backward_input: ZForwardBackwardInput,
});
export type TinkerForwardBackwardBody = z.infer<typeof ZForwardBackwardBody>;

/** 0.24's `/api/v1/forward`: the same input under another name. */
export const ZForwardBody = z.object({
  model_id: ZModelId,
  seq_id: ZSeqId,
  forward_input: ZForwardBackwardInput,
});

/** What a session's or model's user metadata may hold: labels for the user, not a store. */
export const USER_METADATA_LIMITS = { maxBytes: 16 * 1024, maxKeys: 64, maxKeyLength: 128 } as const;

const ZUserMetadata = z
  .record(z.string().min(1).max(USER_METADATA_LIMITS.maxKeyLength), z.json())
  .superRefine((metadata, ctx) => {
    const { maxBytes, maxKeys } = USER_METADATA_LIMITS;
    const keys = Object.keys(metadata).length;
    if (keys > maxKeys) ctx.addIssue({ code: "custom", message: `has ${keys} keys; at most ${maxKeys}` });
    const bytes = Buffer.byteLength(JSON.stringify(metadata));
    if (bytes > maxBytes)
      ctx.addIssue({ code: "custom", message: `is ${bytes} bytes as JSON; at most ${maxBytes}` });
  });

export const ZCreateSessionBody = z.object({
  tags: z.array(z.string().max(256)).max(64).default([]),
  user_metadata: ZUserMetadata.nullish(),
  sdk_version: z.string().max(64).default("unknown"),
  project_id: z.string().max(128).nullish(),
});

export const ZSessionBody = z.object({ session_id: z.string().min(1) });

export const ZCreateModelBody = z.object({
  session_id: z.string().nullish(),
  model_seq_id: z.number().int().nullish(),
  base_model: z.string().min(1),
  user_metadata: ZUserMetadata.nullish(),
  lora_config: z
    .object({
      rank: z.number().int(),
      seed: z.number().int().nullish(),
      train_unembed: z.boolean().default(true),
      train_mlp: z.boolean().default(true),
      train_attn: z.boolean().default(true),
    })
    .nullish(),
});

export const ZModelIdBody = z.object({ model_id: ZModelId });

export const ZOptimStepBody = z.object({
  model_id: ZModelId,
  seq_id: ZSeqId,
  adam_params: z.object({
    learning_rate: z.number().optional(),
    beta1: z.number().optional(),
    beta2: z.number().optional(),
    eps: z.number().optional(),
    weight_decay: z.number().optional(),
    grad_clip_norm: z.number().optional(),
  }),
});

export const ZCreateSamplingSessionBody = z.object({
  session_id: z.string().nullish(),
  sampling_session_seq_id: z.number().int().nonnegative().nullish(),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
});

export const ZSampleBody = z.object({
  num_samples: z.number().int().default(1),
  prompt: ZModelInput,
  sampling_params: z.object({
    max_tokens: z.number().int().nullish(),
    seed: z.number().int().nullish(),
    stop: z.union([z.string(), z.array(z.string()), z.array(z.number().int())]).nullish(),
    temperature: z.number().default(1),
    top_k: z.number().int().default(-1),
    top_p: z.number().default(1),
  }),
  base_model: z.string().nullish(),
  model_path: z.string().nullish(),
  sampling_session_id: z.string().nullish(),
  prompt_logprobs: z.boolean().nullish(),
  topk_prompt_logprobs: z.number().int().default(0),
});
export type TinkerSampleBody = z.infer<typeof ZSampleBody>;

export const ZRetrieveFutureBody = z.object({
  request_id: z.string().min(1),
  allow_metadata_only: z.boolean().optional(),
});
