export * from "./arithmetic.ts";
export * from "./calculator.ts";
export * from "./guess-number.ts";
export * from "./nim.ts";
export * from "./shapes.ts";
export * from "./shapes-image.ts";
export * from "./split.ts";
export * from "./text-env.ts";
