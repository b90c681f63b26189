// Divergence guards shared by the engine (which refuses a training call that
// met a non-finite loss or gradient norm, changing no weight or AdamW moment)
// and the SDK loops (which end a run on it as "diverged"). The refusal crosses
// the wire as a message, so remote and in-process clients recognise it alike.

/** The upper bounds the schemas put on LoRA alpha and on learning rates. */
export const DIVERGENCE_BOUNDS = { maxAlpha: 1024, maxLearningRate: 1 } as const;

/** Every refusal of a non-finite training call starts its reason with this. */
const NON_FINITE = "non-finite";

/** The message of a training call refused because `what` came out as `value` (NaN or ±Infinity). */
export function nonFiniteMessage(op: string, what: string, value: number, consequence: string): string {
  return `${op}: ${NON_FINITE} ${what} (${value}); ${consequence}`;
}

/** Whether `error` is a training call's refusal of a non-finite loss or gradient norm. */
export function isNonFiniteError(error: unknown): boolean {
  const message = error instanceof Error ? error.message : String(error);
  // Anywhere in the message: a remote client's error prefixes the server's.
  return message.includes(`: ${NON_FINITE} `);
}

/**
 * What a training loop throws when step `step` met a non-finite value: the run
 * diverged there, and the last good snapshot and checkpoint are the previous step's.
 */
export class DivergedError extends Error {
  constructor(
    readonly step: number,
    cause: unknown,
  ) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`diverged at step ${step}: ${reason}`, { cause });
    this.name = "DivergedError";
  }
}

/** `error` as a DivergedError at `step` when it is a non-finite refusal; else unchanged. */
export function divergedAt(step: number, error: unknown): unknown {
  return isNonFiniteError(error) ? new DivergedError(step, error) : error;
}
