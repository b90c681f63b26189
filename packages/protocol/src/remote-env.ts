// The wire protocol of a remote environment (DESIGN.md §5): an HTTP server the
// service calls during rollouts. POST <url>/reset starts an episode of a task;
// POST <url>/step feeds it the tokens the model generated. Tokens, not text, so
// the environment decides how to render (it can fetch the base model's tokenizer
// from GET /api/v1/models/{name}/tokenizer).
import { z } from "zod";
import { ZModelInput } from "./model-input.ts";

export const ZStopCondition = z.object({
  stop: z.union([z.array(z.string().min(1)), z.array(z.number().int().nonnegative())]).default([]),
  maxTokens: z.number().int().positive().max(1_000_000),
});

/** Which task to start: the same (split, seed, index) must give the same task (GRPO groups). */
export const ZRemoteResetRequest = z.object({
  split: z.enum(["train", "validation"]),
  seed: z.number().int(),
  index: z.number().int().nonnegative(),
  config: z.record(z.string(), z.unknown()).default({}),
});

export const ZRemoteResetResponse = z.object({
  sessionId: z.string().min(1),
  observation: ZModelInput,
  stop: ZStopCondition,
});

export const ZRemoteStepRequest = z.object({
  sessionId: z.string().min(1),
  action: z.array(z.number().int()),
});

export const ZRemoteStepResponse = z.object({
  reward: z.number().finite(),
  done: z.boolean(),
  nextObservation: ZModelInput.optional(),
  nextStop: ZStopCondition.optional(),
  metrics: z.record(z.string(), z.number()).optional(),
});

/** Whether a remote environment's URL is on the operator's allow-list (host or host:port). */
export function isAllowedRemoteHost(url: string, allowed: readonly string[]): boolean {
  const parsed = new URL(url);
  const hosts = allowed.map((h) => h.trim().toLowerCase()).filter(Boolean);
  return hosts.includes(parsed.host.toLowerCase()) || hosts.includes(parsed.hostname.toLowerCase());
}

/** A comma-separated allow-list (OPENTINKER_REMOTE_ENV_HOSTS) as a list. */
export function parseHostList(text: string): string[] {
  return text
    .split(",")
    .map((h) => h.trim())
    .filter(Boolean);
}

/** OPENTINKER_REMOTE_ENV_HOSTS as a list. */
export function remoteEnvHosts(env: Record<string, string | undefined>): string[] {
  return parseHostList(env.OPENTINKER_REMOTE_ENV_HOSTS ?? "");
}
