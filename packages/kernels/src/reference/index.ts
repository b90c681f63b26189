export * from "./attention.ts";
export * from "./elementwise.ts";
export * from "./gemm.ts";
export * from "./lora.ts";
export * from "./loss.ts";
export * from "./optim.ts";
export * from "./sample.ts";
