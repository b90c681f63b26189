import { sampleDraws, sampleRows, scoreRows } from "../src/index.ts";
import { rng } from "../src/test-utils.ts";
import { interleavedMs, progress, round, sideMedian } from "./timing.ts";

const VOCAB = 151_936; // Qwen2.5's vocabulary
const ROWS = 16; // one decode step at batch 16

/** Logits shaped like a language model's: Gaussian (σ 2.5) with a handful of clear favourites. */
function lmLogits(random: () => number): Float32Array {
  const out = new Float32Array(ROWS * VOCAB);
  for (let i = 0; i < out.length; i++) {
    const u = Math.max(random(), Number.EPSILON);
    out[i] = 2.5 * Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
  }
  for (let r = 0; r < ROWS; r++)
    for (let j = 0; j < 5; j++) out[r * VOCAB + Math.floor(random() * VOCAB)] = 14 - j;
  return out;
}

/** One sampler step's draws (16 rows of a 152K vocabulary) in one sampleRows call, per filter setting. */
export function benchSample() {
  progress(`sample ${ROWS} × ${VOCAB}`);
  const random = rng(5);
  const logits = lmLogits(random);
  const draws = (set: (d: ReturnType<typeof sampleDraws>) => void) => {
    const d = sampleDraws(ROWS);
    for (let i = 0; i < ROWS; i++) {
      d.rowOf[i] = i;
      d.uniforms[i] = random();
    }
    set(d);
    return () => sampleRows(logits, VOCAB, d);
  };
  const samples = interleavedMs({
    greedy: draws((d) => d.temperatures.fill(0)),
    temperature_1: draws(() => {}),
    temperature_0_7: draws((d) => d.temperatures.fill(0.7)),
    top_k_50: draws((d) => d.topK.fill(50)),
    top_p_0_95: draws((d) => d.topP.fill(0.95)),
    min_p_0_05: draws((d) => d.minP.fill(0.05)),
  });
  const ms = Object.fromEntries(
    (Object.keys(samples) as (keyof typeof samples)[]).map((k) => [k, round(sideMedian(samples, k))]),
  );
  // A prompt's scores (its tokens' logprobs, and the top 20 of each position) over the same rows.
  const targets = Int32Array.from({ length: ROWS }, () => Math.floor(random() * VOCAB));
  const scores = interleavedMs({
    logprobs: () => scoreRows(logits, VOCAB, targets, 0),
    top_20: () => scoreRows(logits, VOCAB, targets, 20),
  });
  return {
    rows: ROWS,
    vocab: VOCAB,
    rounds: samples.greedy.length,
    step_ms: ms,
    score_ms: {
      logprobs: round(sideMedian(scores, "logprobs")),
      top_20: round(sideMedian(scores, "top_20")),
    },
  };
}
