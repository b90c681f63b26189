// Seeded task generation with a held-out validation split: every task has a
// stable key; one key in ten belongs to validation and never appears in
// training (an environment may split its own way instead).

/** mulberry32: a small seeded PRNG, so a seed always gives the same tasks. */
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

export type Split = "train" | "validation";

/** FNV-1a of a task's key: decides its split, independent of the generator's seed. */
export function splitOf(key: string): Split {
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193);
  return (h >>> 0) % 10 === 0 ? "validation" : "train";
}

/** Draws tasks from `make` until one of the wanted split comes up (by key hash, or by `splitOfTask`). */
export function drawFromSplit<T>(
  random: () => number,
  split: Split,
  make: (random: () => number) => T,
  key: (task: T) => string,
  splitOfTask: (task: T) => Split = (task) => splitOf(key(task)),
): T {
  for (;;) {
    const task = make(random);
    if (splitOfTask(task) === split) return task;
  }
}
