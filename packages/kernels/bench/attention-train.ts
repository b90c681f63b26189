import { attentionBackward, attentionForward } from "../src/index.ts";
import { randomF32, rng } from "../src/test-utils.ts";
import { interleavedMs, pairedRatio, progress, round, sideMedian } from "./timing.ts";

/** The training attention's shapes: the engine bench's batch (8 × 256 tokens) on the 10M and Qwen-shaped heads. */
const SHAPES = [
  { name: "10M", seqs: 8, len: 256, numHeads: 8, numKvHeads: 4, headDim: 32 },
  { name: "qwen", seqs: 8, len: 256, numHeads: 14, numKvHeads: 2, headDim: 64 },
  { name: "qwen-1x1024", seqs: 1, len: 1024, numHeads: 14, numKvHeads: 2, headDim: 64 },
];

/**
 * Training attention (packed causal sequences): the forward and the backward
 * timed in turn, round by round; `backward_over_forward` is the median of the
 * rounds' ratios (the issue's target: ≤ 2).
 */
export function benchAttentionTrain() {
  return SHAPES.map(({ name, seqs, len, numHeads, numKvHeads, headDim }) => {
    progress(
      `attention_train ${name}: ${seqs} × ${len} tokens, heads ${numHeads}/${numKvHeads}, dim ${headDim}`,
    );
    const random = rng(5);
    const nTokens = seqs * len;
    const seqStarts = Int32Array.from({ length: seqs + 1 }, (_, s) => s * len);
    const heads = { numHeads, numKvHeads, headDim, scale: 1 / Math.sqrt(headDim) };
    const q = randomF32(nTokens * numHeads * headDim, random);
    const k = randomF32(nTokens * numKvHeads * headDim, random);
    const v = randomF32(nTokens * numKvHeads * headDim, random);
    const dOut = randomF32(q.length, random);
    const out = new Float32Array(q.length);
    const lse = new Float32Array(nTokens * numHeads);
    const dq = new Float32Array(q.length);
    const dk = new Float32Array(k.length);
    const dv = new Float32Array(v.length);
    const samples = interleavedMs({
      forward: () => attentionForward(q, k, v, nTokens, seqStarts, heads, out, lse),
      backward: () => attentionBackward(q, k, v, out, lse, dOut, nTokens, seqStarts, heads, dq, dk, dv),
    });
    // Causal: each sequence's L·(L+1)/2 (query, key) pairs, 2·d FLOPs per pair per product.
    const pairs = seqs * ((len * (len + 1)) / 2) * numHeads;
    const gflops = (products: number, ms: number) => round((pairs * 2 * headDim * products) / (ms * 1e6), 1);
    const forwardMs = sideMedian(samples, "forward");
    const backwardMs = sideMedian(samples, "backward");
    return {
      shape: name,
      sequences: seqs,
      tokens_per_sequence: len,
      heads: [numHeads, numKvHeads],
      head_dim: headDim,
      forward_ms: round(forwardMs, 3),
      backward_ms: round(backwardMs, 3),
      forward_gflops: gflops(2, forwardMs),
      backward_gflops_5_products: gflops(5, backwardMs),
      backward_over_forward: round(pairedRatio(samples, "backward", "forward"), 3),
      rounds: samples.forward.length,
    };
  });
}
