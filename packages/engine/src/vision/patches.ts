// Pixels → patch vectors, the input of the vision projection (nn/vision.ts).
//
// Layout (so a checkpoint's `visual.patch_proj.weight` [hidden, C·P·P] is a
// Conv2d(C, hidden, kernel = stride = P) weight [hidden, C, P, P], flattened):
//   patch i = (py, px) in raster order over the (S/P)×(S/P) grid, i = py·(S/P) + px;
//   entry (c, y, x) of a patch at index c·P·P + y·P + x;
//   value = pixel / 255, in [0, 1] (no mean/std normalisation).
import { type VisionConfig, visionDims } from "../model/config.ts";

/** [numPatches, C·P·P] patch vectors of an S×S RGB image. */
export function patchify(rgb: Uint8Array, vision: VisionConfig): Float32Array {
  const { imageSize: S, patchSize: P, numChannels: C } = vision;
  const { numPatches, patchDim } = visionDims(vision);
  const side = S / P;
  const out = new Float32Array(numPatches * patchDim);
  for (let py = 0; py < side; py++) {
    for (let px = 0; px < side; px++) {
      const patch = out.subarray((py * side + px) * patchDim, (py * side + px + 1) * patchDim);
      for (let c = 0; c < C; c++) {
        for (let y = 0; y < P; y++) {
          for (let x = 0; x < P; x++) {
            const pixel = (py * P + y) * S + (px * P + x);
            patch[c * P * P + y * P + x] = (rgb[pixel * 3 + c] as number) / 255;
          }
        }
      }
    }
  }
  return out;
}
