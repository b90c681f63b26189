/** A small seeded PRNG (mulberry32): the same seed gives the same numbers everywhere. */
export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform in [-bound, bound). */
  uniform(bound: number): number {
    return (this.next() * 2 - 1) * bound;
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    const u = Math.max(this.next(), Number.EPSILON);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }

  /** A derived generator, so independent streams stay reproducible. */
  fork(salt: number): Rng {
    return new Rng((Math.imul(this.state ^ salt, 0x9e3779b1) + salt) >>> 0);
  }

  /** The internal state, for checkpoints. */
  snapshot(): number {
    return this.state;
  }
}
