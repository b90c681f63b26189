// Base models' tokenizers in the API process, for showing trajectories as text.
import { IMAGE_POSITION_TOKEN } from "@opentinker/protocol";
import { loadTokenizer, type TextTokenizer } from "@opentinker/tokenizer";

const cache = new Map<string, Promise<TextTokenizer>>();

/** A base model's tokenizer, loaded once from its directory. */
export function tokenizerOfBase(base: { id: string; path: string }): Promise<TextTokenizer> {
  let tokenizer = cache.get(base.id);
  if (!tokenizer) {
    tokenizer = loadTokenizer(base.path);
    tokenizer.catch(() => cache.delete(base.id));
    cache.set(base.id, tokenizer);
  }
  return tokenizer;
}

/** Each token as the text it stands for (special tokens shown as themselves, image positions as ▣). */
export function tokenPieces(tokenizer: TextTokenizer, tokens: readonly number[]): string[] {
  return tokens.map((t) =>
    t === IMAGE_POSITION_TOKEN ? "▣" : tokenizer.decode([t], { skipSpecialTokens: false }),
  );
}
