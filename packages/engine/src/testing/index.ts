// Helpers for tests, benchmarks and examples: models made at run time.
export { parameterCount, QWEN25_05B_SHAPE, randomBaseModel, SMALL_10M_SHAPE } from "./random-model.ts";
export { TINY_MODEL, type TinyModel, type TinyModelOptions, writeTinyModel } from "./tiny-model.ts";
