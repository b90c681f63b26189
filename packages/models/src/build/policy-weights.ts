// A full-parameter policy's current weights as ModelWeights (copies), e.g. to
// evaluate a model part-way through pretraining or to write it out.
import { assembleModelWeights, type ModelConfig, type ModelWeights, type Policy } from "@opentinker/engine";

export function policyWeights(config: ModelConfig, policy: Policy, copy = false): ModelWeights {
  const byName = new Map(policy.tensors.map((t) => [t.name, t.value]));
  return assembleModelWeights(config, ({ name }) => {
    const value = byName.get(name);
    if (!value) throw new Error(`the policy has no tensor ${name}`);
    // The weights come off the policy's device; on the CPU a download shares memory, hence the copy when asked.
    const host = policy.params.backend.download(value);
    return copy ? Float32Array.from(host) : host;
  });
}
