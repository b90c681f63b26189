// The dashboard's playground: a prompt typed as text or a chat, tokenized here
// with the base model's tokenizer and chat template, then sampled through the
// very path of `sampling.sample` (same policy resolution, checks and queue);
// the answer shows every token as text with its logprob. tRPC only: API
// clients tokenize themselves and call `sampling.sample`.
import { getBaseModel } from "@opentinker/db";
import {
  type FutureState,
  modelInputFromTokens,
  type PlaygroundOutcome,
  type PlaygroundPrompt,
  type PolicyRef,
  parseSamplerHandle,
  samplePromptError,
  ZPlaygroundOutcome,
  ZPlaygroundResultRequest,
  ZPlaygroundSample,
  ZPlaygroundSampleRequest,
  ZSampleResponse,
} from "@opentinker/protocol";
import { chatPromptTokens, type TextTokenizer } from "@opentinker/tokenizer";
import type { Caller, Context } from "../context.ts";
import { futureState } from "../present.ts";
import { enqueueSampling, resolvePolicy } from "../sampling-calls.ts";
import { tokenizerOfBase, tokenPieces } from "../tokenizers.ts";
import { badRequest, found, notFound, router, teamProcedure } from "../trpc.ts";

/** How long one call holds the connection for the result; a slower one is waited for again (`result`). */
const WAIT_MS = 30_000;

type TeamContext = Context & { caller: Caller };

/** The tokenizer of the base model the policy (resolved within the team) runs on. */
async function policyTokenizer(ctx: TeamContext, policy: PolicyRef) {
  const target = await resolvePolicy(ctx.db, ctx.caller.teamId, policy);
  const base = found(await getBaseModel(ctx.db, target.model.name), "base model", target.model.name);
  return { model: target.model, tokenizer: await tokenizerOfBase(base) };
}

/** The prompt's tokens, or a 400 naming the field when the chat cannot be rendered. */
function promptTokens(tokenizer: TextTokenizer, prompt: PlaygroundPrompt, model: string): number[] {
  if (prompt.mode === "text") return tokenizer.encode(prompt.text);
  try {
    return chatPromptTokens(tokenizer, prompt.messages);
  } catch {
    // The reason names files on the server; the caller needs only what to change.
    badRequest(`prompt.messages: the base model ${model} has no chat template that renders them`);
  }
}

const tokensOf = (tokenizer: TextTokenizer, ids: readonly number[]) => {
  const pieces = tokenPieces(tokenizer, ids);
  return ids.map((id, i) => ({ id, piece: pieces[i] ?? "" }));
};

/** The version a policy samples: the handle names it (snapshots never change); none for the bare base. */
const versionOf = (policy: PolicyRef) =>
  "handle" in policy ? parseSamplerHandle(policy.handle).version : null;

/** A call's future as the playground shows it: pending, or each sample decoded token by token. */
function present(
  tokenizer: TextTokenizer,
  policy: PolicyRef,
  state: FutureState | undefined,
): PlaygroundOutcome {
  if (!state || state.status === "QUEUED" || state.status === "RUNNING") return { status: "PENDING" };
  if (state.status !== "SUCCEEDED")
    return { status: "FAILED", error: state.error ?? `the call was ${state.status.toLowerCase()}` };
  const output = ZSampleResponse.parse(state.output);
  return {
    status: "SUCCEEDED",
    policyVersion: output.policyVersion ?? versionOf(policy),
    sequences: output.sequences.map((s) => ({
      text: tokenizer.decode(s.tokens, { skipSpecialTokens: true }),
      tokens: tokensOf(tokenizer, s.tokens).map((t, i) => ({ ...t, logprob: s.logprobs[i] ?? 0 })),
      stopReason: s.stopReason,
    })),
  };
}

export const playgroundRouter = router({
  sample: teamProcedure
    .input(ZPlaygroundSampleRequest)
    .output(ZPlaygroundSample)
    .mutation(async ({ ctx, input }) => {
      const { model, tokenizer } = await policyTokenizer(ctx, input.policy);
      const tokens = promptTokens(tokenizer, input.prompt, model.name);
      const prompt = modelInputFromTokens(tokens);
      // The payload of `sampling.sample`, its prompt now tokens.
      const call = { ...input, prompt, waitMs: WAIT_MS };
      const future = await enqueueSampling(ctx, "SAMPLE", call, (limits) =>
        samplePromptError(prompt, limits),
      );
      return {
        requestId: future.requestId,
        prompt: tokensOf(tokenizer, tokens),
        outcome: present(tokenizer, input.policy, future.result),
      };
    }),

  /** A pending call's outcome, once it finishes or after another wait. */
  result: teamProcedure
    .input(ZPlaygroundResultRequest)
    .output(ZPlaygroundOutcome)
    .mutation(async ({ ctx, input }) => {
      const { tokenizer } = await policyTokenizer(ctx, input.policy);
      const row = await ctx.waiter.wait(ctx.caller.teamId, input.requestId, WAIT_MS);
      // Only the team's own sampling calls: anything else answers like a missing one.
      if (row?.kind !== "SAMPLE") notFound("sampling request", input.requestId);
      return present(tokenizer, input.policy, futureState(row));
    }),
});
