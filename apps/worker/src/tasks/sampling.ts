// Sampling calls for a base model served here: any mix of teams, adapters and
// versions is batched by the base model's one sampler.
import type { Db, Prisma } from "@opentinker/db";
import { BASE_KEY } from "@opentinker/engine";
import { type PolicyRef, ZComputeLogprobsInput, ZSampleInput } from "@opentinker/protocol";
import type { Task } from "graphile-worker";
import type { EngineHost } from "../engine-host.ts";
import { type ClaimedRequest, requestTask } from "./request-task.ts";

function policyKey(policy: PolicyRef): string {
  return "handle" in policy ? policy.handle : BASE_KEY;
}

async function runSampling(host: EngineHost, baseId: string, request: ClaimedRequest) {
  const sampler = host.sampler(baseId);
  if (request.kind === "SAMPLE") {
    const input = ZSampleInput.parse(request.input);
    // The model input goes through whole: image chunks become soft tokens in the sampler.
    return sampler.sample(policyKey(input.policy), input.prompt, input.numSamples, input.params);
  }
  if (request.kind === "COMPUTE_LOGPROBS") {
    const input = ZComputeLogprobsInput.parse(request.input);
    return sampler.computeLogprobs(policyKey(input.policy), input.sequence);
  }
  throw new RangeError(`request kind ${request.kind} is not a sampling call`);
}

export function samplingTask(db: Db, host: EngineHost, baseId: string): Task {
  return requestTask(db, (request) => runSampling(host, baseId, request) as Promise<Prisma.InputJsonValue>);
}
