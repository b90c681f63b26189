// Reading and setting a policy's tensors from a test: they live on the policy's
// backend, so a test goes through download and write like any host code.
import type { F32 } from "@opentinker/kernels";
import type { Policy } from "../policy/policy.ts";

/** A copy of a buffer of the policy's backend, on the host. */
export function hostValues(policy: Policy, buffer: F32): Float32Array {
  return Float32Array.from(policy.params.backend.download(buffer));
}

/** Sets a buffer of the policy's backend to `values` (an array, or a function of the index). */
export function setValues(
  policy: Policy,
  buffer: F32,
  values: ArrayLike<number> | ((i: number) => number),
): void {
  const data =
    typeof values === "function"
      ? Float32Array.from({ length: buffer.length }, (_, i) => values(i))
      : Float32Array.from(values);
  policy.params.backend.write(buffer, data);
}
