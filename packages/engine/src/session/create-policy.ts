// The policy a session trains, from what the caller (an API row, a client's
// config) says of it; what it leaves out takes the protocol's defaults.
import { LORA_DEFAULTS } from "@opentinker/protocol";
import type { BaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import type { Policy } from "../policy/policy.ts";

export interface PolicySpec {
  kind: "lora" | "full";
  rank?: number | null;
  alpha?: number | null;
  trainAttn?: boolean;
  trainMlp?: boolean;
  trainUnembed?: boolean;
  seed?: number;
}

export function createPolicy(base: BaseModel, spec: PolicySpec): Policy {
  if (spec.kind === "full") return createFullPolicy(base);
  return createLoraPolicy(base, {
    rank: spec.rank ?? LORA_DEFAULTS.rank,
    alpha: spec.alpha ?? LORA_DEFAULTS.alpha,
    trainAttn: spec.trainAttn ?? true,
    trainMlp: spec.trainMlp ?? true,
    trainUnembed: spec.trainUnembed ?? false,
    seed: spec.seed ?? 0,
  });
}
