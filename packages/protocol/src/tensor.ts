import { z } from "zod";

/** A flat array with its dtype and shape, as Tinker's TensorData. */
export const ZTensorData = z
  .object({
    dtype: z.enum(["int64", "float32"]),
    shape: z.array(z.number().int().nonnegative()).optional(),
    data: z.array(z.number()),
  })
  .superRefine((tensor, ctx) => {
    const expected = tensor.shape?.reduce((a, b) => a * b, 1);
    if (expected !== undefined && expected !== tensor.data.length) {
      ctx.addIssue({
        code: "custom",
        path: ["data"],
        message: `has ${tensor.data.length} values, shape says ${expected}`,
      });
    }
    if (tensor.dtype === "int64" && tensor.data.some((v) => !Number.isInteger(v))) {
      ctx.addIssue({ code: "custom", path: ["data"], message: "int64 data must be integers" });
    }
  });

export type TensorData = z.infer<typeof ZTensorData>;

export const int64Tensor = (data: readonly number[]): TensorData => ({
  dtype: "int64",
  shape: [data.length],
  data: [...data],
});
export const float32Tensor = (data: readonly number[]): TensorData => ({
  dtype: "float32",
  shape: [data.length],
  data: [...data],
});
