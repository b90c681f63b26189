// A full-parameter policy's current weights as ModelWeights (copies), e.g. to
// evaluate a model part-way through pretraining or to write it out.
import { assembleModelWeights, type ModelConfig, type ModelWeights, type Policy } from "@opentinker/engine";

export function policyWeights(config: ModelConfig, policy: Policy, copy = false): ModelWeights {
  const byName = new Map(policy.tensors.map((t) => [t.name, t.value]));
  return assembleModelWeights(config, ({ name }) => {
    const value = byName.get(name);
    if (!value) throw new Error(`the policy has no tensor ${name}`);
    return copy ? Float32Array.from(value) : value;
  });
}
