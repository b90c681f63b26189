// How a stored trajectory reads on screen: tokens with their whitespace made
// visible, whether each is the model's (mask 1) or the environment's, which of
// them are tool calls and tool replies, and the advantage its action tokens
// were trained with.

export type TokenKind = "action" | "observation" | "tool-call" | "tool-output";

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

const MESSAGE_START = "<|im_start|>";

/**
 * The ChatML role of the message each token belongs to ("" before the first
 * message): a message runs from its `<|im_start|>` to the next one, and its
 * role is the text between that marker and the first newline.
 */
export function messageRoles(pieces: readonly string[]): { role: string; message: number }[] {
  const out: { role: string; message: number }[] = [];
  let message = -1;
  let role = "";
  let reading = false;
  for (const piece of pieces) {
    if (piece === MESSAGE_START) {
      message++;
      role = "";
      reading = true;
    } else if (reading) {
      const cut = piece.indexOf("\n");
      role += cut >= 0 ? piece.slice(0, cut) : piece;
      reading = cut < 0;
    }
    out.push({ role, message });
  }
  // A role is only known once its header has been read: give every token of a message its final role.
  const final = new Map(out.map((t) => [t.message, t.role]));
  return out.map((t) => ({ role: final.get(t.message) ?? "", message: t.message }));
}

/**
 * Each token's kind. With the tokens' text (ChatML), the environment's `tool`
 * messages are tool output, and the model's turn just before one is a tool
 * call; without it, only action and observation.
 */
export function tokenKinds(mask: readonly number[], pieces?: readonly string[]): TokenKind[] {
  const plain = mask.map(tokenKind);
  if (!pieces || pieces.length !== mask.length) return plain;
  const roles = messageRoles(pieces);
  const roleOf = new Map(roles.map((r) => [r.message, r.role]));
  return plain.map((kind, i) => {
    const { role, message } = roles[i] as { role: string; message: number };
    if (kind === "observation") return role === "tool" ? "tool-output" : kind;
    return roleOf.get(message + 1) === "tool" ? "tool-call" : kind;
  });
}

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
