// The dashboard's playground: a sampling call whose prompt is text or a chat
// (tokenized by the service with the base model's tokenizer and chat template),
// answered with each token as text beside its logprob. The policy, the number
// of samples and the sampling settings are the API's own (ZSampleInput), so
// their defaults and bounds have one home.
import { z } from "zod";
import { ZSampleInput } from "./api.ts";
import { ZPolicyRef } from "./handles.ts";
import { ZChatMessage } from "./jobs.ts";
import { ZStopReason } from "./sampling.ts";

/** Longest prompt text accepted before tokenizing (the context length bounds it again after). */
export const PLAYGROUND_MAX_TEXT = 100_000;

export const ZPlaygroundPrompt = z.discriminatedUnion("mode", [
  /** Raw text, tokenized as transformers' `encode` does (with the tokenizer's special tokens). */
  z.object({
    mode: z.literal("text"),
    text: z.string().min(1, "type a prompt").max(PLAYGROUND_MAX_TEXT),
  }),
  /** Messages rendered by the model's chat template, ending with the assistant's turn. */
  z.object({
    mode: z.literal("chat"),
    messages: z.array(ZChatMessage).min(1, "add at least one message").max(256),
  }),
]);
export type PlaygroundPrompt = z.infer<typeof ZPlaygroundPrompt>;

export const ZPlaygroundSampleRequest = ZSampleInput.omit({ prompt: true }).extend({
  prompt: ZPlaygroundPrompt,
});
export type PlaygroundSampleRequest = z.input<typeof ZPlaygroundSampleRequest>;

/** A token of the prompt: its id and the text it stands for. */
export const ZPlaygroundToken = z.object({ id: z.number().int(), piece: z.string() });
/** A sampled token, with log π(token) at temperature 1 (as the API reports it). */
export const ZPlaygroundSampledToken = ZPlaygroundToken.extend({ logprob: z.number() });

export const ZPlaygroundSequence = z.object({
  /** The sampled tokens decoded together, special tokens left out. */
  text: z.string(),
  tokens: z.array(ZPlaygroundSampledToken),
  stopReason: ZStopReason,
});
export type PlaygroundSequence = z.infer<typeof ZPlaygroundSequence>;

/** Where the call stands: still queued or running, done, or failed on the worker. */
export const ZPlaygroundOutcome = z.discriminatedUnion("status", [
  z.object({ status: z.literal("PENDING") }),
  z.object({
    status: z.literal("SUCCEEDED"),
    sequences: z.array(ZPlaygroundSequence),
    policyVersion: z.number().int().nullable(),
  }),
  z.object({ status: z.literal("FAILED"), error: z.string() }),
]);
export type PlaygroundOutcome = z.infer<typeof ZPlaygroundOutcome>;

export const ZPlaygroundSample = z.object({
  requestId: z.string(),
  prompt: z.array(ZPlaygroundToken),
  outcome: ZPlaygroundOutcome,
});
export type PlaygroundSample = z.infer<typeof ZPlaygroundSample>;

/** Waits again for a call that was still pending (its policy names the tokenizer that decodes it). */
export const ZPlaygroundResultRequest = z.object({ requestId: z.string().min(1), policy: ZPolicyRef });
