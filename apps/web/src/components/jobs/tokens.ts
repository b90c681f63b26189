// How a stored trajectory reads on screen: tokens with their whitespace made
// visible, whether each is the model's (mask 1) or the environment's, and the
// advantage its action tokens were trained with.

export type TokenKind = "action" | "observation";

/** A stretch of a token's text; `mark` stretches stand in for whitespace and are drawn faint. */
export interface Segment {
  text: string;
  mark: boolean;
}

const MARKS: Record<string, string> = { " ": "·", "\t": "→", "\r": "␍", "\n": "↵\n" };

/**
 * A token's text with spaces, tabs and newlines shown (a newline also breaks
 * the line); an empty piece shows as ∅ so it still takes room.
 */
export function visibleSegments(piece: string): Segment[] {
  if (piece === "") return [{ text: "∅", mark: true }];
  const segments: Segment[] = [];
  for (const char of piece) {
    const mark = MARKS[char] ?? (/\s/u.test(char) ? "·" : undefined);
    const text = mark ?? char;
    const last = segments.at(-1);
    if (last && last.mark === (mark !== undefined)) last.text += text;
    else segments.push({ text, mark: mark !== undefined });
  }
  return segments;
}

/** The model produced a token exactly when its mask is 1, whatever its advantage. */
export const tokenKind = (mask: number | undefined): TokenKind => (mask === 1 ? "action" : "observation");

/**
 * The advantage of each of the trajectory's turns, in order: the value on the
 * first token of each run of action tokens (a turn's tokens share it), with
 * repeats of the same value collapsed. Empty when the model produced nothing.
 */
export function turnAdvantages(mask: readonly number[], advantages: readonly number[]): number[] {
  const values: number[] = [];
  for (let i = 0; i < mask.length; i++) {
    const startsRun = mask[i] === 1 && (i === 0 || mask[i - 1] !== 1);
    const value = advantages[i];
    if (startsRun && value !== undefined && values.at(-1) !== value) values.push(value);
  }
  return values;
}
