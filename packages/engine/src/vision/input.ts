// A ModelInput (text and image chunks) → what the model runs on: one token id per
// position (image positions hold the config's image_token_id) and, per image, its
// patch vectors and the positions its soft tokens take. Every chunk is checked
// here, before anything runs, with errors that name the chunk.
import type { ModelInput } from "@opentinker/protocol";
import { type ModelConfig, type VisionConfig, visionDims } from "../model/config.ts";
import { decodeImage } from "./image.ts";
import { patchify } from "./patches.ts";

export interface PreparedImage {
  /** The image covers sequence positions [start, start + length). */
  start: number;
  /** numPatches: one soft token per patch. */
  length: number;
  patches: Float32Array; // [numPatches, C·P·P]
  /** Content hash of the pixels (prefix-cache identity). */
  hash: string;
}

export interface PreparedInput {
  tokens: Int32Array; // [n]: text token ids; image_token_id at image positions
  /** In order of position; empty for text-only input. */
  images: PreparedImage[];
}

/** The positions an image takes: numPatches, which `expectedTokens` must state. */
function imagePositions(expectedTokens: number, config: ModelConfig, where: string): number {
  const vision = config.vision;
  if (!vision) throw new RangeError(`${where} is an image, but this base model has no vision input`);
  const { numPatches } = visionDims(vision);
  if (expectedTokens !== numPatches) {
    const { imageSize: S, patchSize: P } = vision;
    throw new RangeError(
      `${where}.expectedTokens is ${expectedTokens}, but this model gives an image ${numPatches} ` +
        `tokens (${S}×${S} pixels in ${P}×${P} patches)`,
    );
  }
  return numPatches;
}

/**
 * Checks and converts `input`. `context` starts every error message and `name`
 * is the input's name in it, e.g. "forward: data[2]: modelInput.chunks[0] …".
 */
export function prepareInput(
  input: ModelInput,
  config: ModelConfig,
  context: string,
  name = "modelInput",
): PreparedInput {
  const where = (c: number) => `${context}: ${name}.chunks[${c}]`;
  // First pass: the shape of every chunk, so the buffer's length is known to be sane.
  let length = 0;
  for (const [c, chunk] of input.chunks.entries()) {
    if (chunk.type === "encoded_text") length += chunk.tokens.length;
    else if (chunk.type === "image") length += imagePositions(chunk.expectedTokens, config, where(c));
    else throw new RangeError(`${where(c)} has type ${JSON.stringify((chunk as { type: unknown }).type)}`);
  }
  const tokens = new Int32Array(length);
  const images: PreparedImage[] = [];
  const vocab = config.vocabSize;
  let at = 0;
  for (const [c, chunk] of input.chunks.entries()) {
    if (chunk.type === "encoded_text") {
      for (const [i, t] of chunk.tokens.entries()) {
        if (!Number.isInteger(t) || t < 0 || t >= vocab) {
          throw new RangeError(`${where(c)}.tokens[${i}] is ${t}, expected a token id in [0, ${vocab})`);
        }
        tokens[at++] = t;
      }
      continue;
    }
    const vision = config.vision as VisionConfig; // checked in the first pass
    const decoded = decodeImage(chunk, vision, where(c));
    images.push({
      start: at,
      length: chunk.expectedTokens,
      patches: patchify(decoded.rgb, vision),
      hash: decoded.hash,
    });
    tokens.fill(vision.imageTokenId, at, at + chunk.expectedTokens);
    at += chunk.expectedTokens;
  }
  return { tokens, images };
}
