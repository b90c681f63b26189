// An optional KL penalty against a reference policy, folded into the advantages:
// on each action token, A ← A − β·(log π_rollout − log π_ref), the per-token
// sample estimate of KL(π_rollout ‖ π_ref).
import { type Datum, lossInput, type ModelInput, type SamplingClient } from "@opentinker/protocol";

export interface KlPenalty {
  reference: SamplingClient;
  coef: number;
}

function fullSequence(datum: Datum): ModelInput {
  const targets = lossInput(datum, "targetTokens");
  const last = targets[targets.length - 1] as number;
  return { chunks: [...datum.modelInput.chunks, { type: "encoded_text", tokens: [last] }] };
}

/** Applies the penalty in place; returns the mean per-token KL estimate over action tokens. */
export async function applyKlPenalty(datums: Datum[], penalty: KlPenalty): Promise<number> {
  let total = 0;
  let count = 0;
  for (const datum of datums) {
    const reference = await (await penalty.reference.computeLogprobs(fullSequence(datum))).result();
    const mask = lossInput(datum, "mask");
    const logprobs = lossInput(datum, "logprobs");
    const advantages = lossInput(datum, "advantages");
    for (let j = 0; j < mask.length; j++) {
      if (!mask[j]) continue;
      // Target j is the token at position j + 1 of the full sequence.
      const kl = (logprobs[j] as number) - (reference[j + 1] ?? 0);
      advantages[j] = (advantages[j] as number) - penalty.coef * kl;
      total += kl;
      count++;
    }
  }
  return count ? total / count : 0;
}
