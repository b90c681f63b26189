// Synthetic pictures for `shapes`: filled circles, squares and triangles on a
// plain background, drawn into RGBA pixels and encoded as PNG by pngjs.
import { PNG } from "pngjs";

export type ShapeKind = "circle" | "square" | "triangle";
export const SHAPE_KINDS: readonly ShapeKind[] = ["circle", "square", "triangle"];

export interface PlacedShape {
  kind: ShapeKind;
  cx: number;
  cy: number;
  /** Half the shape's width. */
  r: number;
  color: [number, number, number];
}

function inside(s: PlacedShape, x: number, y: number): boolean {
  const dx = x - s.cx;
  const dy = y - s.cy;
  if (s.kind === "circle") return dx * dx + dy * dy <= s.r * s.r;
  if (s.kind === "square") return Math.abs(dx) <= s.r && Math.abs(dy) <= s.r;
  // An upright triangle: apex at the top, base at the bottom of the box.
  if (dy < -s.r || dy > s.r) return false;
  const halfWidth = ((dy + s.r) / (2 * s.r)) * s.r;
  return Math.abs(dx) <= halfWidth;
}

/** A PNG of `size` × `size` pixels with the shapes drawn in order. */
export function drawShapes(shapes: readonly PlacedShape[], size: number): Buffer {
  const png = new PNG({ width: size, height: size });
  for (let y = 0; y < size; y++) {
    for (let x = 0; x < size; x++) {
      const at = (y * size + x) * 4;
      let color: [number, number, number] = [245, 245, 240];
      for (const s of shapes) if (inside(s, x + 0.5, y + 0.5)) color = s.color;
      png.data[at] = color[0];
      png.data[at + 1] = color[1];
      png.data[at + 2] = color[2];
      png.data[at + 3] = 255;
    }
  }
  return PNG.sync.write(png);
}

/** Decodes a PNG back to RGBA pixels (for tests and viewers). */
export function readPng(bytes: Buffer): { width: number; height: number; data: Buffer } {
  const png = PNG.sync.read(bytes);
  return { width: png.width, height: png.height, data: png.data };
}
