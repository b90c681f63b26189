// Training state (C1): weights, AdamW moments and step, so a run resumes with
// bit-identical next steps.
import type { F32 } from "@opentinker/kernels";
import { decodeSafetensors, encodeSafetensors } from "../model/index.ts";
import { type Policy, zeroGrads } from "../policy/policy.ts";

export const STATE_FILE = "training_state.safetensors";

/** The files of a checkpoint of `policy` (copies of its buffers). */
export function stateFiles(policy: Policy): Map<string, Uint8Array> {
  const be = policy.params.backend;
  const tensors = policy.tensors.flatMap((t) => [
    { name: t.name, dtype: "F32" as const, shape: t.shape, data: be.download(t.value) },
    { name: `${t.name}::adam_m`, dtype: "F32" as const, shape: t.shape, data: be.download(t.m) },
    { name: `${t.name}::adam_v`, dtype: "F32" as const, shape: t.shape, data: be.download(t.v) },
  ]);
  const metadata = {
    kind: policy.kind,
    step: String(policy.step),
    base_model: policy.base.name,
    lora: policy.lora ? JSON.stringify(policy.lora) : "",
  };
  return new Map([[STATE_FILE, encodeSafetensors(tensors, metadata)]]);
}

/**
 * Whether a checkpoint's LoRA spec (as stored) trains the same tensors at the
 * same scale as `spec`. The seed only chose the initial weights, so it may differ.
 */
function sameLoraShape(stored: string, spec: Policy["lora"]): boolean {
  if (!spec) return stored === "";
  let theirs: unknown;
  try {
    theirs = JSON.parse(stored);
  } catch {
    return false;
  }
  const { seed: _, ...ours } = spec;
  const { seed: __, ...other } = (theirs ?? {}) as Record<string, unknown>;
  return JSON.stringify(Object.entries(ours).sort()) === JSON.stringify(Object.entries(other).sort());
}

/**
 * Restores a checkpoint into `policy`: weights, AdamW moments and step, or with
 * `optimizer: false` the weights alone. Everything is checked (kind, LoRA spec,
 * names, shapes) before anything is copied, so a mismatch changes nothing.
 * Accumulated gradients are cleared.
 */
export function restoreState(
  policy: Policy,
  files: ReadonlyMap<string, Uint8Array>,
  where: string,
  options: { optimizer?: boolean } = {},
): void {
  const bytes = files.get(STATE_FILE);
  if (!bytes) throw new Error(`${where}: ${STATE_FILE} is missing`);
  const contents = decodeSafetensors(bytes, `${where}/${STATE_FILE}`);
  const meta = contents.metadata ?? {};
  if (meta.kind !== policy.kind)
    throw new Error(`${where}: a ${meta.kind} checkpoint cannot load into a ${policy.kind} policy`);
  if (!sameLoraShape(meta.lora ?? "", policy.lora)) {
    throw new Error(`${where}: the checkpoint's LoRA configuration ${meta.lora} differs from the policy's`);
  }
  const step = Number(meta.step);
  if (!Number.isInteger(step) || step < 0)
    throw new Error(`${where}: the checkpoint's step "${meta.step}" is invalid`);
  const optimizer = options.optimizer ?? true;
  const be = policy.params.backend;
  const copies: [Float32Array, F32][] = [];
  for (const t of policy.tensors) {
    const parts: [string, F32][] = [["", t.value]];
    if (optimizer) parts.push(["::adam_m", t.m], ["::adam_v", t.v]);
    for (const [suffix, target] of parts) {
      const stored = contents.tensors.get(t.name + suffix);
      if (!stored || stored.data.length !== target.length) {
        throw new Error(`${where}: tensor ${t.name + suffix} is ${stored ? "the wrong size" : "missing"}`);
      }
      copies.push([stored.data, target]);
    }
  }
  for (const [from, to] of copies) be.write(to, from);
  if (optimizer) policy.step = step;
  else {
    // Weights only: AdamW starts over (no moments, step 0), as a fresh optimizer would.
    for (const t of policy.tensors) {
      be.fill(t.m, 0);
      be.fill(t.v, 0);
    }
    policy.step = 0;
  }
  zeroGrads(policy);
}
