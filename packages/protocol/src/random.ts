// The one seeded PRNG of the TypeScript packages above the kernels (environments'
// tasks, scripted opponents, test weights), so a seed means the same stream
// everywhere. Kept here, the lowest package they all import.

/** mulberry32: a small seeded PRNG, uniform in [0, 1); stable across platforms. */
export function seededRandom(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
