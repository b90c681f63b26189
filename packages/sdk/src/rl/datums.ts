// Trajectories → RL datums (C6, C7): one token sequence per stretch of turns whose
// observations extend the previous context; only the model's action tokens are on
// the mask, observations are context. Where a turn's observation does not extend
// the context (e.g. a summarised history) a new datum starts.
import { buildRlDatum, type Datum, type ModelInput, type Sequence } from "@opentinker/protocol";
import type { ScoredTrajectory } from "./advantages.ts";

interface Building {
  chunks: ModelInput["chunks"];
  tokens: number[];
  mask: number[];
  logprobs: number[];
  advantages: number[];
  textOnly: boolean;
}

function positions(input: ModelInput): { tokens: number[]; textOnly: boolean } {
  const tokens: number[] = [];
  let textOnly = true;
  for (const chunk of input.chunks) {
    if (chunk.type === "encoded_text") tokens.push(...chunk.tokens);
    else {
      textOnly = false;
      for (let i = 0; i < chunk.expectedTokens; i++) tokens.push(0); // placeholder positions of the image
    }
  }
  return { tokens, textOnly };
}

function extendsContext(current: Building, next: { tokens: number[]; textOnly: boolean }): boolean {
  if (!current.textOnly || !next.textOnly || next.tokens.length < current.tokens.length) return false;
  return current.tokens.every((t, i) => next.tokens[i] === t);
}

export interface DatumOptions {
  /** Divide advantages by the number of action tokens (for summed losses). */
  normalize?: "none" | "responseLength";
}

export function trajectoryDatums(scored: ScoredTrajectory, options: DatumOptions = {}): Datum[] {
  const datums: Datum[] = [];
  let current: Building | null = null;
  const flush = () => {
    if (!current || current.mask.every((m) => m === 0)) return;
    const sequence: Sequence = { input: { chunks: current.chunks }, tokens: current.tokens };
    datums.push(
      buildRlDatum({
        sequence,
        mask: current.mask,
        logprobs: current.logprobs,
        advantages: current.advantages,
        normalize: options.normalize ?? "none",
      }),
    );
  };
  scored.trajectory.transitions.forEach((turn, t) => {
    const ob = positions(turn.observation);
    if (current && extendsContext(current, ob)) {
      // Only the new part of the observation is appended, masked out.
      const fresh = ob.tokens.slice(current.tokens.length);
      current.chunks.push({ type: "encoded_text", tokens: fresh });
      current.tokens.push(...fresh);
      for (const _ of fresh) {
        current.mask.push(0);
        current.logprobs.push(0);
        current.advantages.push(0);
      }
    } else {
      flush();
      current = {
        chunks: turn.observation.chunks.map((c) => ({ ...c })),
        tokens: [...ob.tokens],
        mask: ob.tokens.map(() => 0),
        logprobs: ob.tokens.map(() => 0),
        advantages: ob.tokens.map(() => 0),
        textOnly: ob.textOnly,
      };
    }
    const advantage = scored.turnAdvantages[t] ?? 0;
    current.chunks.push({ type: "encoded_text", tokens: [...turn.actionTokens] });
    current.tokens.push(...turn.actionTokens);
    for (const [i] of turn.actionTokens.entries()) {
      current.mask.push(1);
      current.logprobs.push(turn.actionLogprobs[i] ?? 0);
      current.advantages.push(advantage);
    }
  });
  flush();
  return datums;
}
