// Base models' tokenizers in the web process, for showing trajectories as text.
import type { Db } from "@opentinker/db";
import { IMAGE_POSITION_TOKEN } from "@opentinker/protocol";
import { loadTokenizer, type TextTokenizer } from "@opentinker/tokenizer";

const cache = new Map<string, Promise<TextTokenizer>>();

export function tokenizerOfBase(db: Db, baseModelId: string): Promise<TextTokenizer> {
  let tokenizer = cache.get(baseModelId);
  if (!tokenizer) {
    tokenizer = db.baseModel
      .findUniqueOrThrow({ where: { id: baseModelId } })
      .then((base) => loadTokenizer(base.path));
    tokenizer.catch(() => cache.delete(baseModelId));
    cache.set(baseModelId, tokenizer);
  }
  return tokenizer;
}

/** Each token as the text it stands for (special tokens shown as themselves, image positions as ▣). */
export function tokenPieces(tokenizer: TextTokenizer, tokens: readonly number[]): string[] {
  return tokens.map((t) =>
    t === IMAGE_POSITION_TOKEN ? "▣" : tokenizer.decode([t], { skipSpecialTokens: false }),
  );
}
