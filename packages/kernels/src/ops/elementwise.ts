// Placeholder while the module is written.
export type ElementwiseBinding = Record<never, never>;
