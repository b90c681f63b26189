// Which inputs a check's malformed or illegal actions answered. The checks
// revisit a small held-out set (arithmetic: 1,024 draws of 49 problems), so a
// rise can be one input answered badly every time rather than a general drift;
// the counts per input tell the two apart.
import { createHash } from "node:crypto";
import type { ModelInput } from "@opentinker/protocol";
import type { RendererTokenizer, TrajectoryGroup } from "@opentinker/sdk";

export interface MalformedInput {
  /** The turn the action answered: the observation's images (`[image <sha256 prefix>]`), then its last message as text. */
  input: string;
  /** Malformed or illegal actions on it, and every action on it. */
  malformed: number;
  actions: number;
  /** Its most frequent malformed action, as text. */
  example: string;
}

/** How many inputs a summary keeps: the ones with the most malformed actions. */
export const MALFORMED_INPUTS_KEPT = 5;

const END_OF_MESSAGE = "<|im_end|>";

/** The last message of a rendered context (ChatML), without its role line: what the action answers. */
export function lastMessage(text: string): string {
  const turns = text.split("<|im_start|>");
  for (let i = turns.length - 1; i >= 0; i--) {
    const turn = turns[i] ?? "";
    const body = turn.slice(turn.indexOf("\n") + 1);
    const end = body.indexOf(END_OF_MESSAGE);
    // The assistant's opening (no end yet) is not a message; the one before it is.
    if (end >= 0) return body.slice(0, end).trim();
  }
  return text.trim();
}

/** An image named by its bytes' hash, so two pictures with the same question stay apart. */
const imageName = (data: string) => `[image ${createHash("sha256").update(data).digest("hex").slice(0, 8)}]`;

/** The turn an action answered: the observation's images (wherever they sit), then its last message. */
function inputOf(input: ModelInput, tokenizer: RendererTokenizer): string {
  const text = input.chunks
    .map((c) => (c.type === "encoded_text" ? tokenizer.decode(c.tokens) : ""))
    .join("");
  const images = input.chunks.flatMap((c) => (c.type === "image" ? [imageName(c.data)] : []));
  return [...images, lastMessage(text)].join(" ");
}

/** The environments' metrics that mark an action malformed (text answers) or illegal (game moves). */
const MALFORMED_METRICS = ["format/malformed", "game/illegal_move"] as const;

/** Malformed text answers and illegal game moves, as one rate, from metrics named `${prefix}env/<metric>`. */
export const malformedRate = (m: Record<string, number>, prefix: string) =>
  MALFORMED_METRICS.reduce((sum, k) => sum + (m[`${prefix}env/${k}`] ?? 0), 0);

/** One action's own metrics (no prefix) mark it malformed. */
const isMalformed = (metrics: Record<string, number>) => MALFORMED_METRICS.some((k) => (metrics[k] ?? 0) > 0);

/** Every input that drew a malformed action, most malformed first (ties: the input's text). */
export function malformedInputs(
  groups: readonly TrajectoryGroup[],
  tokenizer: RendererTokenizer,
  keep = MALFORMED_INPUTS_KEPT,
): MalformedInput[] {
  const byInput = new Map<string, { malformed: number; actions: number; answers: Map<string, number> }>();
  for (const group of groups)
    for (const trajectory of group.trajectories)
      for (const t of trajectory.transitions) {
        const input = inputOf(t.observation, tokenizer);
        const entry = byInput.get(input) ?? { malformed: 0, actions: 0, answers: new Map<string, number>() };
        entry.actions += 1;
        if (isMalformed(t.metrics)) {
          entry.malformed += 1;
          const answer = tokenizer.decode(t.actionTokens);
          entry.answers.set(answer, (entry.answers.get(answer) ?? 0) + 1);
        }
        byInput.set(input, entry);
      }
  return [...byInput]
    .filter(([, e]) => e.malformed > 0)
    .sort(([a, x], [b, y]) => y.malformed - x.malformed || a.localeCompare(b))
    .slice(0, keep)
    .map(([input, e]) => ({
      input,
      malformed: e.malformed,
      actions: e.actions,
      example: [...e.answers].sort(([a, x], [b, y]) => y - x || a.localeCompare(b))[0]?.[0] ?? "",
    }));
}
