export * from "./clients.ts";
export * from "./datum.ts";
export * from "./handles.ts";
export * from "./losses.ts";
export * from "./model-input.ts";
export * from "./sampling.ts";
export * from "./tensor.ts";
