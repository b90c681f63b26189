export type { ApiFuture, SamplingClient, ServiceClient, TrainingClient } from "@opentinker/protocol";
export * from "./env/types.ts";
export * from "./metrics/sink.ts";
export * from "./rl/advantages.ts";
export * from "./rl/datums.ts";
export * from "./rl/train.ts";
export * from "./rollout/rollout.ts";
export * from "./rollout/trajectory.ts";
