export * from "./arithmetic.ts";
export * from "./guess-number.ts";
export * from "./nim.ts";
export * from "./split.ts";
export * from "./text-env.ts";
