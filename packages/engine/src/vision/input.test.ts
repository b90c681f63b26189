import { describe, expect, it } from "vitest";
import type { ModelConfig } from "../model/config.ts";
import { pngImageChunk } from "../testing/images.ts";
import { prepareInput } from "./input.ts";

const TEXT: ModelConfig = {
  architecture: "llama",
  hiddenSize: 8,
  intermediateSize: 8,
  numLayers: 1,
  numHeads: 1,
  numKvHeads: 1,
  headDim: 8,
  vocabSize: 100,
  rmsNormEps: 1e-6,
  ropeTheta: 10_000,
  ropeScaling: null,
  maxPositionEmbeddings: 64,
  tieWordEmbeddings: true,
  attentionBias: false,
  bosTokenId: null,
  eosTokenIds: [],
  torchDtype: "float32",
};
// 8×8 images in 4×4 patches: 4 soft tokens of 3·4·4 = 48 values.
const VL: ModelConfig = { ...TEXT, vision: { imageSize: 8, patchSize: 4, numChannels: 3, imageTokenId: 99 } };

const text = (tokens: number[]) => ({ type: "encoded_text" as const, tokens });
const gray = (x: number, y: number) => [x * 10, y * 10, 200] as const;

describe("prepareInput", () => {
  it("puts the image token at image positions and records where each image starts", () => {
    const out = prepareInput({ chunks: [text([1, 2]), pngImageChunk(8, gray, 4), text([3])] }, VL, "t");
    expect(Array.from(out.tokens)).toEqual([1, 2, 99, 99, 99, 99, 3]);
    expect(out.images.map((i) => [i.start, i.length, i.patches.length])).toEqual([[2, 4, 4 * 48]]);
  });

  it("lays patches out in raster order, channel-major within a patch, scaled to [0, 1]", () => {
    const [image] = prepareInput({ chunks: [pngImageChunk(8, gray, 4)] }, VL, "t").images;
    const patches = image?.patches as Float32Array;
    // Patch 1 is (py 0, px 1); its entry (c, y, x) is pixel (4 + x, y), channel c.
    const at = (patch: number, c: number, y: number, x: number) => patches[patch * 48 + c * 16 + y * 4 + x];
    expect(at(1, 0, 2, 3)).toBeCloseTo(((4 + 3) * 10) / 255, 6);
    expect(at(1, 1, 2, 3)).toBeCloseTo((2 * 10) / 255, 6);
    expect(at(2, 1, 3, 0)).toBeCloseTo(((4 + 3) * 10) / 255, 6);
    expect(at(3, 2, 0, 0)).toBeCloseTo(200 / 255, 6);
  });

  it("the same pixels hash the same, different pixels differently", () => {
    const hash = (chunk: ReturnType<typeof pngImageChunk>) =>
      prepareInput({ chunks: [chunk] }, VL, "t").images[0]?.hash;
    expect(hash(pngImageChunk(8, gray, 4))).toBe(hash(pngImageChunk(8, gray, 4)));
    expect(hash(pngImageChunk(8, gray, 4))).not.toBe(hash(pngImageChunk(8, () => [0, 0, 0], 4)));
  });

  it("rejects bad images with errors naming the chunk and what was wrong", () => {
    const chunks = (image: ReturnType<typeof pngImageChunk>) => ({ chunks: [text([1]), image] });
    expect(() => prepareInput(chunks(pngImageChunk(8, gray, 4)), TEXT, "forward: data[0]")).toThrow(
      "forward: data[0]: modelInput.chunks[1] is an image, but this base model has no vision input",
    );
    expect(() => prepareInput(chunks(pngImageChunk(16, gray, 4)), VL, "x")).toThrow(
      "x: modelInput.chunks[1]: the image is 16×16 pixels, this model takes 8×8",
    );
    expect(() => prepareInput(chunks(pngImageChunk(8, gray, 4, 6)), VL, "x")).toThrow(/is 8×6 pixels/);
    expect(() => prepareInput(chunks(pngImageChunk(8, gray, 5)), VL, "x")).toThrow(
      "x: modelInput.chunks[1].expectedTokens is 5, but this model gives an image 4 tokens (8×8 pixels in 4×4 patches)",
    );
    const corrupt = { ...pngImageChunk(8, gray, 4), data: Buffer.from("not a png").toString("base64") };
    expect(() => prepareInput(chunks(corrupt), VL, "x")).toThrow(
      /x: modelInput.chunks\[1\]: the image data is not a valid PNG/,
    );
    const jpeg = { ...pngImageChunk(8, gray, 4), format: "jpeg" as const };
    expect(() => prepareInput(chunks(jpeg), VL, "x")).toThrow(/jpeg images are not supported yet/);
    expect(() => prepareInput({ chunks: [text([1, 100])] }, VL, "x", "prompt")).toThrow(
      "x: prompt.chunks[0].tokens[1] is 100, expected a token id in [0, 100)",
    );
  });
});
