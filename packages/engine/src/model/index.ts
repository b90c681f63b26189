// Model I/O: Hugging Face config, safetensors, weights and tokenizer loading.

export {
  type ChatMessage,
  createTextTokenizer,
  loadTokenizer,
  type TextTokenizer,
  type TokenizerSources,
} from "@opentinker/tokenizer";
export {
  type Architecture,
  loadModelConfig,
  type ModelConfig,
  modelConfigToJson,
  parseModelConfig,
  type RopeScaling,
  SUPPORTED_ARCHITECTURES,
  type VisionConfig,
  visionDims,
} from "./config.ts";
export { type BaseModelDescription, describeBaseModel } from "./describe.ts";
export { type WrittenFile, writeFileAtomically, writeJsonFile } from "./files.ts";
export {
  bf16ToFloats,
  decodeFloats,
  encodeFloats,
  type FloatDtype,
  floatsToBf16,
  roundToDtype,
} from "./float-convert.ts";
export { type HfModel, type LoadModelOptions, loadHfModel } from "./hf-model.ts";
export { type RopeSettings, ropeFrequencies } from "./rope.ts";
export {
  decodeSafetensors,
  encodeSafetensors,
  type LoadedTensor,
  readSafetensors,
  readSafetensorsHeader,
  readSafetensorsWeights,
  type SafetensorsContents,
  type SafetensorsHeader,
  sha256File,
  type TensorInfo,
  type TensorsToWrite,
  type TensorToWrite,
  writeSafetensors,
} from "./safetensors.ts";
export {
  DEFAULT_WEIGHT_DTYPE,
  type WeightArray,
  type WeightDtype,
  type WeightDtypeChoice,
  weightAs,
  weightDtypeFromEnv,
  weightDtypeOf,
  widenWeight,
} from "./weight-dtype.ts";
export {
  assembleModelWeights,
  convertModelWeights,
  EMBED_TOKENS,
  FINAL_NORM,
  INDEX_FILE,
  type LayerWeights,
  LM_HEAD,
  layerTensorName,
  type ModelWeights,
  matrixTensorNames,
  modelTensorSpecs,
  modelWeightTensors,
  SINGLE_FILE,
  type TensorSpec,
  VISION_PATCH_BIAS,
  VISION_PATCH_PROJ,
  VISION_POS_EMBED,
  type VisionWeights,
  visionTensorSpecs,
} from "./weights.ts";
export { loadModelWeights } from "./weights-read.ts";
export { type WriteWeightsOptions, writeModelConfig, writeModelWeights } from "./write-model.ts";
