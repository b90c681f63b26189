import { attentionDecode, createPagedKvCache, pagedAttention } from "../src/index.ts";
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

/**
 * Prefill attention: one 512-token prompt attending causally to itself through the
 * paged cache, as the sampler's prefill step runs it, for the 10M model's heads
 * (8 query / 4 KV, head dim 32) and the Qwen2.5-0.5B shape's (14 / 2, 64).
 */
export function benchAttentionPrefill() {
  const tokens = 512;
  const blockSize = 16;
  const shapes = [
    { model: "10M", numHeads: 8, numKvHeads: 4, headDim: 32 },
    { model: "qwen", numHeads: 14, numKvHeads: 2, headDim: 64 },
  ];
  return shapes.map(({ model, numHeads, numKvHeads, headDim }) => {
    progress(`attention_prefill ${model} ${tokens} tokens`);
    const random = rng(5);
    const blocks = tokens / blockSize;
    const cache = createPagedKvCache(blocks, blockSize, numKvHeads, headDim);
    cache.keyCache.set(randomF32(cache.keyCache.length, random));
    cache.valueCache.set(randomF32(cache.valueCache.length, random));
    const rows = {
      rowSeq: new Int32Array(tokens),
      rowPos: Int32Array.from({ length: tokens }, (_, i) => i),
      blockTables: Int32Array.from({ length: blocks }, (_, b) => blocks - 1 - b),
      numSeqs: 1,
      maxBlocksPerSeq: blocks,
    };
    const q = randomF32(tokens * numHeads * headDim, random);
    const out = new Float32Array(q.length);
    const scale = 1 / Math.sqrt(headDim);
    const ms = medianMs(() => pagedAttention(q, tokens, rows, cache, numHeads, scale, out));
    // Scores and the weighted sum of values: 2 · 2 · d multiply-adds per (row, head, position).
    const flops = 4 * headDim * numHeads * ((tokens * (tokens + 1)) / 2);
    return {
      model,
      tokens,
      heads: [numHeads, numKvHeads],
      head_dim: headDim,
      ms: round(ms, 4),
      gflops: round(flops / ms / 1e6, 1),
    };
  });
}
