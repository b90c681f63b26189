import { attentionDecode, createPagedKvCache } from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { medianMs, progress, round } from "./timing.ts";

/** Decode attention: 16 sequences × 512 cached tokens, 14 query / 2 KV heads, head dim 64. */
export function benchAttentionDecode() {
  const [seqs, context, numHeads, numKvHeads, headDim, blockSize] = [16, 512, 14, 2, 64, 16];
  progress(`attention_decode ${seqs} × ${context} tokens`);
  const random = rng(4);
  const blocksPerSeq = context / blockSize;
  const cache = createPagedKvCache(seqs * blocksPerSeq, blockSize, numKvHeads, headDim);
  cache.keyCache.set(randomF32(cache.keyCache.length, random));
  cache.valueCache.set(randomF32(cache.valueCache.length, random));
  // Blocks of different sequences interleave, as they would after many admissions.
  const blockTables = new Int32Array(seqs * blocksPerSeq);
  for (let s = 0; s < seqs; s++)
    for (let b = 0; b < blocksPerSeq; b++) blockTables[s * blocksPerSeq + b] = b * seqs + s;
  const contextLens = new Int32Array(seqs).fill(context);
  const q = randomF32(seqs * numHeads * headDim, random);
  const out = new Float32Array(q.length);
  const ms = medianMs(() =>
    attentionDecode(q, contextLens, blockTables, blocksPerSeq, cache, numHeads, 1 / 8, out),
  );
  return {
    sequences: seqs,
    context_tokens: context,
    heads: [numHeads, numKvHeads],
    head_dim: headDim,
    block_size: blockSize,
    step_ms: round(ms, 4),
    tokens_per_s: round((seqs * 1000) / ms, 1),
  };
}
