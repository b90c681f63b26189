// PNG image chunks for tests and examples, drawn pixel by pixel or at random.
import type { ImageChunk } from "@opentinker/protocol";
import { PNG } from "pngjs";

export type PixelFn = (x: number, y: number) => readonly [number, number, number];

/** A width×height PNG (RGBA, opaque) with the colours of `pixel`. */
export function drawPng(width: number, height: number, pixel: PixelFn): Buffer {
  const png = new PNG({ width, height });
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const [r, g, b] = pixel(x, y);
      png.data.set([r, g, b, 255], (y * width + x) * 4);
    }
  }
  return PNG.sync.write(png);
}

/** An image chunk of a size×size PNG (square by default; `height` makes it not). */
export function pngImageChunk(
  size: number,
  pixel: PixelFn,
  expectedTokens: number,
  height = size,
): ImageChunk {
  return {
    type: "image",
    format: "png",
    data: drawPng(size, height, pixel).toString("base64"),
    expectedTokens,
  };
}

/** A size×size image of seeded random colours (different seeds: different images). */
export function randomImageChunk(size: number, seed: number, expectedTokens: number): ImageChunk {
  let state = seed >>> 0 || 1;
  const next = () => {
    // xorshift32: enough for distinct test pictures.
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state & 255;
  };
  return pngImageChunk(size, () => [next(), next(), next()], expectedTokens);
}
