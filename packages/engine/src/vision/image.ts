// Image chunks → pixels: base64 PNG bytes decoded to S×S RGB. Only PNG for now
// (the built-in environments render PNG); a JPEG chunk is rejected by name.
import { createHash } from "node:crypto";
import type { ImageChunk } from "@opentinker/protocol";
import { PNG } from "pngjs";
import type { VisionConfig } from "../model/config.ts";

export interface DecodedImage {
  /** [S, S, 3] row-major RGB bytes; alpha, when present, is dropped (not composited). */
  rgb: Uint8Array;
  /** SHA-256 of the RGB pixels: the image's identity in the prefix cache. */
  hash: string;
}

function decodePng(bytes: Buffer, context: string): { width: number; height: number; rgba: Buffer } {
  try {
    // pngjs expands every colour type and bit depth to 8-bit RGBA.
    const png = PNG.sync.read(bytes);
    return { width: png.width, height: png.height, rgba: png.data };
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new RangeError(`${context}: the image data is not a valid PNG (${why})`);
  }
}

/** Decodes an image chunk for a model with this vision config; errors name `context` and what was wrong. */
export function decodeImage(chunk: ImageChunk, vision: VisionConfig, context: string): DecodedImage {
  if (chunk.format !== "png") {
    throw new RangeError(`${context}: ${chunk.format} images are not supported yet; send the image as PNG`);
  }
  const { width, height, rgba } = decodePng(Buffer.from(chunk.data, "base64"), context);
  const S = vision.imageSize;
  if (width !== S || height !== S) {
    throw new RangeError(`${context}: the image is ${width}×${height} pixels, this model takes ${S}×${S}`);
  }
  const rgb = new Uint8Array(S * S * 3);
  for (let p = 0; p < S * S; p++) {
    rgb[p * 3] = rgba[p * 4] as number;
    rgb[p * 3 + 1] = rgba[p * 4 + 1] as number;
    rgb[p * 3 + 2] = rgba[p * 4 + 2] as number;
  }
  return { rgb, hash: createHash("sha256").update(rgb).digest("base64") };
}
