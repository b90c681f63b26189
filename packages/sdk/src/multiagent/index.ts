// The multi-agent coordinator for turn-based games (DESIGN.md C11), its ways to
// play (self-play, fixed opponents, per-player policies) and Nim to test it.
export * from "./coordinator.ts";
export * from "./game.ts";
export * from "./nim.ts";
export * from "./play.ts";
