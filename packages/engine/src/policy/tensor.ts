import type { Backend, F32 } from "@opentinker/kernels";

/** A trainable tensor with its gradient and AdamW moments, all the same length, on the policy's backend. */
export interface TrainableTensor {
  /** Its name in exported files (PEFT or Hugging Face naming). */
  name: string;
  shape: number[];
  value: F32;
  grad: F32;
  m: F32;
  v: F32;
}

/** A trainable tensor holding `value` (uploaded), with zero gradient and moments. */
export function trainable(be: Backend, name: string, shape: number[], value: Float32Array): TrainableTensor {
  const size = shape.reduce((a, b) => a * b, 1);
  if (value.length !== size)
    throw new RangeError(`${name}: ${value.length} values for shape [${shape.join(", ")}]`);
  return {
    name,
    shape,
    value: be.upload(value, shape),
    grad: be.alloc("f32", shape),
    m: be.alloc("f32", shape),
    v: be.alloc("f32", shape),
  };
}
