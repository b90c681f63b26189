// Sampling calls for a base model served here: any mix of teams, adapters and
// versions is batched by the base model's one sampler.
import type { Db, Prisma } from "@opentinker/db";
import { ZComputeLogprobsInput, ZSampleInput } from "@opentinker/protocol";
import type { Task } from "graphile-worker";
import type { EngineHost } from "../engine-host.ts";
import { type ClaimedRequest, requestTask } from "./request-task.ts";

async function runSampling(host: EngineHost, baseId: string, request: ClaimedRequest) {
  const sampler = host.sampler(baseId);
  if (request.kind === "SAMPLE") {
    const input = ZSampleInput.parse(request.input);
    const policy = await host.policySource(request.teamId, input.policy);
    // The model input goes through whole: image chunks become soft tokens in the sampler.
    const { promptLogprobs, topkPromptLogprobs } = input;
    return sampler.sample(policy, input.prompt, input.numSamples, input.params, {
      tenant: request.teamId,
      promptLogprobs,
      topkPromptLogprobs,
    });
  }
  if (request.kind === "COMPUTE_LOGPROBS") {
    const input = ZComputeLogprobsInput.parse(request.input);
    return sampler.computeLogprobs(await host.policySource(request.teamId, input.policy), input.sequence);
  }
  throw new RangeError(`request kind ${request.kind} is not a sampling call`);
}

export function samplingTask(db: Db, host: EngineHost, baseId: string): Task {
  return requestTask(db, (request) => runSampling(host, baseId, request) as Promise<Prisma.InputJsonValue>);
}
