import { describe, expect, it } from "vitest";
import { BUILTIN_ENVIRONMENTS } from "./environments.ts";
import { jobSize, ZRlJobConfig } from "./jobs.ts";
import { bestMetricOf, RL_PRESETS, rlPresetOf } from "./presets.ts";

describe("RL presets", () => {
  it("every built-in environment has one, and it is a valid RL job config as it stands", () => {
    for (const env of BUILTIN_ENVIRONMENTS) {
      const preset = RL_PRESETS[env];
      const config = ZRlJobConfig.parse(preset.config);
      expect(config).toMatchObject(preset.config);
      // Validation happens at every quarter, so there is a step-0 baseline, three in between and the end.
      expect(preset.config.steps % preset.config.validation.every).toBe(0);
      const size = jobSize({ kind: "RL", adapterId: "a", environmentId: "e", config });
      expect(size.sequencesPerStep.value).toBeLessThanOrEqual(512); // a new team's maxSequencesPerStep
    }
  });

  it("a job's best version is chosen by its environment's metric, else the mean reward", () => {
    expect(bestMetricOf("guess-number")).toBe("val/env/found");
    expect(bestMetricOf("nim")).toBe("val/env/game/won");
    expect(bestMetricOf("shapes")).toBe("val/reward/mean");
    expect(bestMetricOf(null)).toBe("val/reward/mean");
    expect(rlPresetOf("toString")).toBeUndefined();
  });
});
