// Helpers for tests, benchmarks and examples: models made at run time.

export { drawPng, type PixelFn, pngImageChunk, randomImageChunk } from "./images.ts";
export { parameterCount, QWEN25_05B_SHAPE, randomBaseModel, SMALL_10M_SHAPE } from "./random-model.ts";
export { type ReferenceImage, referenceLogprobs, referenceLogSoftmax } from "./reference-forward.ts";
export { hostValues, setValues } from "./tensors.ts";
export { TINY_MODEL, type TinyModel, type TinyModelOptions, writeTinyModel } from "./tiny-model.ts";
export {
  byteLevelBpeFiles,
  byteToUnicode,
  CHATML_TEMPLATE,
  ENDOFTEXT,
  IM_END,
  IM_START,
  IMAGE_TOKEN,
  QWEN2_SPLIT_PATTERN,
  type TextMerge,
  type TinyTokenizerFiles,
  tinyTokenizerFiles,
  toByteLevel,
} from "./tiny-tokenizer.ts";
