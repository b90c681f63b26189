// Seeded task generation with a held-out validation split: every task has a
// stable key; one key in ten belongs to validation and never appears in
// training (an environment may split its own way instead).

/** The seeded PRNG, so a seed always gives the same tasks (one home: protocol's random.ts). */
export { seededRandom } from "@opentinker/protocol";

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
