// What the service records about a base model when it is registered (one place,
// for `npm start`, tests and benches): read from the model directory's config.
import { loadModelConfig, visionDims } from "./config.ts";

export interface BaseModelDescription {
  name: string;
  path: string;
  architecture: string;
  vocabSize: number;
  contextLength: number;
  visionLanguage: boolean;
  /** Positions one image takes (vision-language models), else null. */
  imageTokens: number | null;
}

export async function describeBaseModel(name: string, dir: string): Promise<BaseModelDescription> {
  const config = await loadModelConfig(dir);
  return {
    name,
    path: dir,
    architecture: config.architecture,
    vocabSize: config.vocabSize,
    contextLength: config.maxPositionEmbeddings,
    visionLanguage: config.vision !== undefined,
    imageTokens: config.vision ? visionDims(config.vision).numPatches : null,
  };
}
