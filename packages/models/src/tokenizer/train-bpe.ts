// A small, deterministic byte-level BPE trainer: the built-in models' merges are
// learned from their own corpus, so the environments' fixed phrases ("What is",
// " Reply with the number only.") become a few tokens each and prompts stay short.
// Training splits text the way the Qwen2 pre-tokenizer does, so no merge crosses
// a boundary the real tokenizer would keep; digits stay single tokens.
import type { TextMerge } from "@opentinker/engine/testing";

// The Qwen2 split pattern (QWEN2_SPLIT_PATTERN) in JavaScript syntax: Node 20's
// RegExp has no `(?i:…)` group, so the contractions spell out both cases.
const QWEN2_SPLIT = new RegExp(
  [
    "'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]",
    "[^\\r\\n\\p{L}\\p{N}]?\\p{L}+",
    "\\p{N}",
    " ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*",
    "\\s*[\\r\\n]+",
    "\\s+(?!\\S)",
    "\\s+",
  ].join("|"),
  "gu",
);

export interface BpeTrainingOptions {
  /** At most this many merges. */
  maxMerges: number;
  /** A pair seen fewer times than this is not merged. */
  minFrequency: number;
  /** Tokens the tokenizer keeps whole (ChatML markers); text is split around them. */
  specialTokens: readonly string[];
}

/** The pre-tokens of `text`, special tokens removed (they never take part in merges). */
export function preTokens(text: string, specialTokens: readonly string[]): string[] {
  let pieces = [text];
  for (const special of specialTokens) pieces = pieces.flatMap((piece) => piece.split(special));
  return pieces.flatMap((piece) => piece.match(QWEN2_SPLIT) ?? []);
}

const pairKey = (left: string, right: string) => `${left}\u0000${right}`;

/**
 * Merges in priority order. Each round merges the most frequent adjacent pair;
 * ties go to the pair that sorts first, so the same corpus always gives the same
 * merges. The corpus must be ASCII: a merge is stored as plain text, and half of
 * a multi-byte character has no plain-text form.
 */
export function trainBpe(texts: Iterable<string>, options: BpeTrainingOptions): TextMerge[] {
  const counts = new Map<string, number>();
  for (const text of texts) {
    for (let i = 0; i < text.length; i++) {
      if (text.charCodeAt(i) > 127) {
        throw new RangeError(
          `trainBpe: the corpus must be ASCII; found ${JSON.stringify(text[i])} in ${JSON.stringify(text)}`,
        );
      }
    }
    for (const word of preTokens(text, options.specialTokens)) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  // Each distinct pre-token once, as its current symbols, with how often it occurs.
  const words = [...counts].map(([word, count]) => ({ symbols: [...word], count }));
  const merges: TextMerge[] = [];
  while (merges.length < options.maxMerges) {
    const pairs = new Map<string, { left: string; right: string; count: number }>();
    for (const { symbols, count } of words) {
      for (let i = 0; i + 1 < symbols.length; i++) {
        const left = symbols[i] as string;
        const right = symbols[i + 1] as string;
        const key = pairKey(left, right);
        const entry = pairs.get(key);
        if (entry) entry.count += count;
        else pairs.set(key, { left, right, count });
      }
    }
    let best: { left: string; right: string; count: number } | undefined;
    for (const [key, entry] of pairs) {
      if (
        !best ||
        entry.count > best.count ||
        (entry.count === best.count && key < pairKey(best.left, best.right))
      )
        best = entry;
    }
    if (!best || best.count < options.minFrequency) break;
    merges.push([best.left, best.right]);
    for (const word of words) word.symbols = mergePair(word.symbols, best.left, best.right);
  }
  return merges;
}

function mergePair(symbols: string[], left: string, right: string): string[] {
  const out: string[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (symbols[i] === left && symbols[i + 1] === right) {
      out.push(left + right);
      i++;
    } else out.push(symbols[i] as string);
  }
  return out;
}
