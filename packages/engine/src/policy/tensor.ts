/** A trainable tensor with its gradient and AdamW moments, all the same length. */
export interface TrainableTensor {
  /** Its name in exported files (PEFT or Hugging Face naming). */
  name: string;
  shape: number[];
  value: Float32Array;
  grad: Float32Array;
  m: Float32Array;
  v: Float32Array;
}

export function trainable(name: string, shape: number[], value: Float32Array): TrainableTensor {
  const size = shape.reduce((a, b) => a * b, 1);
  if (value.length !== size)
    throw new RangeError(`${name}: ${value.length} values for shape [${shape.join(", ")}]`);
  return {
    name,
    shape,
    value,
    grad: new Float32Array(size),
    m: new Float32Array(size),
    v: new Float32Array(size),
  };
}
