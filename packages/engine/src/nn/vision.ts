// The vision stage of a vision-language model: image patches → a learned linear
// projection plus a learned position embedding → soft tokens, written over the
// token embeddings at the image's positions. Backward turns the soft tokens'
// gradients into the projection's and position embedding's (when they train):
// dW += Σ_patches g ⊗ patch, db += Σ g, dPos[i] += g_i.
import { addInPlace } from "@opentinker/kernels";
import { linearBackward, linearForward } from "./linear.ts";
import type { VisionParams } from "./params.ts";

/** An image in a packed batch: its first row and how many of its patches the batch holds. */
export interface BatchImage {
  row: number;
  /** Leading patches present (all, unless the sequence ends inside the image). */
  count: number;
  patches: Float32Array; // [≥ count, C·P·P]
}

/** Runs `each` on every image of a batch with the model's vision part and the hidden size. */
function eachImage(
  vision: VisionParams | undefined,
  images: readonly BatchImage[],
  each: (vision: VisionParams, image: BatchImage, H: number) => void,
): void {
  if (!vision) throw new Error("the batch has images, but the model has no vision part");
  for (const image of images) each(vision, image, vision.proj.dOut);
}

/** The first `count` soft tokens of an image [count, hidden]. */
export function softTokens(vision: VisionParams, patches: Float32Array, count: number): Float32Array {
  const { dIn, dOut: H } = vision.proj;
  const out = new Float32Array(count * H);
  linearForward(vision.proj, patches.subarray(0, count * dIn), count, out);
  const pos = vision.posEmbed.value;
  addInPlace(out, pos.subarray(0, count * H));
  return out;
}

/** Overwrites the rows of `h` [T, hidden] that images cover with their soft tokens. */
export function embedImages(
  vision: VisionParams | undefined,
  images: readonly BatchImage[],
  h: Float32Array,
): void {
  eachImage(vision, images, (v, image, H) => h.set(softTokens(v, image.patches, image.count), image.row * H));
}

/**
 * Given dh = dL/d(embedding output) [T, hidden]: accumulates the vision part's
 * gradients (when it trains) and zeroes the image rows of dh, so the
 * placeholder token's embedding gets no gradient from positions it never fed.
 */
export function embedImagesBackward(
  vision: VisionParams | undefined,
  images: readonly BatchImage[],
  dh: Float32Array,
): void {
  eachImage(vision, images, (v, image, H) => {
    const rows = dh.subarray(image.row * H, (image.row + image.count) * H);
    if (v.proj.weightGrad || v.proj.biasGrad) {
      linearBackward(
        v.proj,
        image.patches.subarray(0, image.count * v.proj.dIn),
        rows,
        image.count,
        null,
        false,
      );
    }
    const posGrad = v.posEmbed.grad;
    if (posGrad) addInPlace(posGrad.subarray(0, rows.length), rows);
    rows.fill(0);
  });
}
