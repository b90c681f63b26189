// Sampling calls by policy handle (or the bare base model): the handle must be a
// snapshot of the caller's team; the call goes to the base model's workers.
import {
  logprobSequenceError,
  samplePromptError,
  ZComputeLogprobsInput,
  ZFutureRef,
  ZSampleInput,
  ZWaitMs,
} from "@opentinker/protocol";
import { enqueueSampling } from "../sampling-calls.ts";
import { router, teamRoute } from "../trpc.ts";

export const samplingRouter = router({
  sample: teamRoute("POST", "/v1/sampling/sample", "sampling")
    .input(ZSampleInput.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(({ ctx, input }) =>
      enqueueSampling(ctx, "SAMPLE", input, (model) => samplePromptError(input.prompt, model)),
    ),

  computeLogprobs: teamRoute("POST", "/v1/sampling/compute-logprobs", "sampling")
    .input(ZComputeLogprobsInput.extend({ waitMs: ZWaitMs }))
    .output(ZFutureRef)
    .mutation(({ ctx, input }) =>
      enqueueSampling(ctx, "COMPUTE_LOGPROBS", input, (model) => logprobSequenceError(input.sequence, model)),
    ),
});
