// When a sequence stops: a stop token id, a stop string in the decoded text (the
// stop sequence is kept in the output), or maxTokens.
import type { SamplingParams } from "@opentinker/protocol";

export interface Detokenizer {
  decode(ids: readonly number[]): string;
}

export type StopCheck = (generated: readonly number[]) => "stop" | "length" | null;

/** A checker for one request; eosTokenIds always stop, as in vLLM. */
export function stopChecker(
  params: SamplingParams,
  eosTokenIds: readonly number[],
  detok?: Detokenizer,
): StopCheck {
  const stopIds = new Set<number>(eosTokenIds);
  const stopStrings: string[] = [];
  for (const s of params.stop) {
    if (typeof s === "number") stopIds.add(s);
    else stopStrings.push(s);
  }
  if (stopStrings.length > 0 && !detok) throw new Error("stop strings need a tokenizer to decode with");
  const longest = Math.max(0, ...stopStrings.map((s) => s.length));
  return (generated) => {
    const last = generated[generated.length - 1];
    if (last !== undefined && stopIds.has(last)) return "stop";
    if (stopStrings.length > 0 && detok) {
      // Only the tail can contain a newly completed stop string: decode a window
      // of tokens wide enough for the longest one.
      const tail = detok.decode(generated.slice(-Math.max(8, longest + 4)));
      if (stopStrings.some((s) => tail.includes(s))) return "stop";
    }
    return generated.length >= params.maxTokens ? "length" : null;
  };
}
