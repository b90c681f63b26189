// Placeholder while the module is written.
export type OptimBinding = Record<never, never>;
