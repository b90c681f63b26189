// Placeholder while the module is written.
export type AttentionBinding = Record<never, never>;
