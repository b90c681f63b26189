// Placeholder while the module is written.
export {};
