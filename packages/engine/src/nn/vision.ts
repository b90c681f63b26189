// The vision stage of a vision-language model: image patches → a learned linear
// projection plus a learned position embedding → soft tokens, written over the
// token embeddings at the image's positions. Backward turns the soft tokens'
// gradients into the projection's and position embedding's (when they train):
// dW += Σ_patches g ⊗ patch, db += Σ g, dPos[i] += g_i.
import type { Backend, F32 } from "@opentinker/kernels";
import type { Arena } from "./arena.ts";
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

/** An image's first `count` patches on the device. */
const patchesOf = (vision: VisionParams, patches: Float32Array, count: number, arena: Arena): F32 =>
  arena.upload(patches.subarray(0, count * vision.proj.dIn), [count, vision.proj.dIn]);

/** The first `count` soft tokens of an image [count, hidden], in `out` (a buffer of the arena unless given). */
export function softTokens(
  be: Backend,
  vision: VisionParams,
  patches: Float32Array,
  count: number,
  arena: Arena,
  out: F32 = arena.f32(count, vision.proj.dOut),
): F32 {
  const H = vision.proj.dOut;
  linearForward(be, vision.proj, patchesOf(vision, patches, count, arena), count, out);
  be.addInPlace(out, be.view(vision.posEmbed.value, 0, [count, H]));
  return out;
}

/** Overwrites the rows of `h` [T, hidden] that images cover with their soft tokens. */
export function embedImages(
  be: Backend,
  vision: VisionParams | undefined,
  images: readonly BatchImage[],
  h: F32,
  arena: Arena,
): void {
  eachImage(vision, images, (v, image, H) => {
    softTokens(be, v, image.patches, image.count, arena, be.view(h, image.row * H, [image.count, H]));
  });
}

/**
 * Given dh = dL/d(embedding output) [T, hidden]: accumulates the vision part's
 * gradients (when it trains) and zeroes the image rows of dh, so the
 * placeholder token's embedding gets no gradient from positions it never fed.
 */
export function embedImagesBackward(
  be: Backend,
  vision: VisionParams | undefined,
  images: readonly BatchImage[],
  dh: F32,
  arena: Arena,
): void {
  eachImage(vision, images, (v, image, H) => {
    const rows = be.view(dh, image.row * H, [image.count, H]);
    if (v.proj.weightGrad || v.proj.biasGrad) {
      linearBackward(
        be,
        v.proj,
        patchesOf(v, image.patches, image.count, arena),
        rows,
        image.count,
        null,
        false,
      );
    }
    const posGrad = v.posEmbed.grad;
    if (posGrad) be.addInPlace(be.view(posGrad, 0, [image.count, H]), rows);
    be.fill(rows, 0);
  });
}
