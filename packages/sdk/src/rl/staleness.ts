// C4: how far behind the trainer a trajectory's sampler was, and what to do about it.

export interface StalenessPolicy {
  /** Trajectories more than this many versions behind the trainer … */
  maxStaleness: number;
  /** … are dropped, or kept and importance-corrected by the loss's ratio. */
  mode: "drop" | "correct";
}

/**
 * A trajectory from version v trained at version t has staleness t − v; past
 * maxStaleness it is dropped, or kept for the loss's importance ratio to correct.
 */
export function applyStaleness(
  trajectoryVersion: number,
  trainerVersion: number,
  policy: StalenessPolicy | undefined,
): { staleness: number; keep: boolean } {
  const staleness = trainerVersion - trajectoryVersion;
  const keep = !policy || staleness <= policy.maxStaleness || policy.mode === "correct";
  return { staleness, keep };
}
