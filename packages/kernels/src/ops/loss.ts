// Placeholder while the module is written.
export type LossBinding = Record<never, never>;
