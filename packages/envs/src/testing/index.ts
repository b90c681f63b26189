// The tiny random model behind an in-process service, for the environments' tests.
import { mkdtemp } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import type { RendererTokenizer } from "@opentinker/sdk";

export interface TinyService {
  dir: string;
  tokenizer: RendererTokenizer;
  service: InProcessServiceClient;
  end: number;
  /** The text's tokens, then <|im_end|>: an action as the model writes it. */
  say: (text: string) => number[];
}

export async function openTinyService(name: string): Promise<TinyService> {
  const dir = await mkdtemp(path.join(tmpdir(), `ot-${name}-`));
  await writeTinyModel(path.join(dir, "model"), TINY_MODEL);
  const base = await loadBaseModel(path.join(dir, "model"), "tiny");
  const tokenizer = base.tokenizer as RendererTokenizer;
  const end = tokenizer.tokenId("<|im_end|>") as number;
  const service = InProcessServiceClient.local([base], path.join(dir, "store"), name, {
    kvCacheBytes: 8 << 20,
    blockSize: 8,
  });
  const say = (text: string) => [...tokenizer.encode(text, { addSpecialTokens: false }), end];
  return { dir, tokenizer, service, end, say };
}
