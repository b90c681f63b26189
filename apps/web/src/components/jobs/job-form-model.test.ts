import { BUILTIN_ENVIRONMENTS, RL_PRESETS, ZJobRequest, ZRlJobConfig } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import {
  INITIAL_VALUES,
  type JobFormValues,
  validateJobForm,
  withEnvironmentPreset,
} from "./job-form-model.ts";

const rl = (patch: Partial<JobFormValues>): JobFormValues => ({
  ...INITIAL_VALUES,
  adapterId: "adapter-1",
  environmentId: "env-1",
  steps: "40",
  ...patch,
});

function errorsOf(values: JobFormValues) {
  const verdict = validateJobForm(values);
  if (verdict.ok) throw new Error("expected the form to be invalid");
  return verdict.errors;
}

describe("new-job form", () => {
  it("a filled-in RL form is a request the server's schema accepts", () => {
    const verdict = validateJobForm(
      rl({ dropConstantGroups: false, validationEvery: "5", validationGroups: "2" }),
    );
    expect(verdict.ok).toBe(true);
    if (!verdict.ok) return;
    expect(ZJobRequest.safeParse(verdict.request).success).toBe(true);
    expect(verdict.request.config).toMatchObject({
      steps: 40,
      dropConstantGroups: false,
      validation: { every: 5, groups: 2 },
    });
  });

  it("choosing a built-in environment makes its preset the form's defaults, submitted as the preset", () => {
    for (const env of BUILTIN_ENVIRONMENTS) {
      const verdict = validateJobForm(withEnvironmentPreset(rl({ steps: "" }), env));
      expect(verdict.ok).toBe(true);
      if (!verdict.ok) return;
      // The same config as the preset itself parsed, field for field.
      expect(verdict.request.config).toEqual(ZRlJobConfig.parse(RL_PRESETS[env].config));
    }
  });

  it("a preset's fields stay editable, and an environment without a preset leaves the form as it was", () => {
    const shapes = withEnvironmentPreset(rl({}), "shapes");
    const verdict = validateJobForm({ ...shapes, steps: "30" });
    expect(verdict.ok && verdict.request.config).toMatchObject({
      steps: 30,
      groupsPerStep: RL_PRESETS.shapes.config.groupsPerStep,
      validation: RL_PRESETS.shapes.config.validation,
    });
    const before = rl({ groupSize: "3" });
    expect(withEnvironmentPreset(before, null)).toEqual(before);
  });

  it("steps has no default, so a blank one is required", () => {
    expect(errorsOf(rl({ steps: "" })).steps).toBe("Required");
  });

  it("typed text in a number field is reported on that field, not submitted", () => {
    const errors = errorsOf(rl({ groupSize: "eight", steps: "1.5" }));
    expect(errors.groupSize).toBe("Enter a number");
    expect(errors.steps).toBe("Enter a whole number");
  });

  it("nested config errors land on their field (learning rate, gradient clip, validation groups)", () => {
    const errors = errorsOf(rl({ learningRate: "-1", gradClipNorm: "-2", validationEvery: "3" }));
    expect(errors.learningRate).toMatch(/at least 0/);
    expect(errors.gradClipNorm).toMatch(/at least 0/);
    expect(errors.validationGroups).toBe("Required");
  });

  it("a KL reference is sent as the handle typed, needs a KL weight, and is left out when blank", () => {
    const handle = "opentinker://team-a/adapter-1/sampler/3";
    const verdict = validateJobForm(rl({ referenceKl: "0.2", referenceModel: ` ${handle} ` }));
    expect(verdict.ok && verdict.request.config).toMatchObject({ referenceKl: 0.2, referenceModel: handle });
    const blank = validateJobForm(rl({ referenceKl: "0.2" }));
    expect(blank.ok && "referenceModel" in blank.request.config).toBe(false);
    expect(errorsOf(rl({ referenceModel: handle })).referenceModel).toMatch(/referenceKl, which is 0/);
    expect(errorsOf(rl({ referenceKl: "0.2", referenceModel: "sampler-3" })).referenceModel).toMatch(
      /expected opentinker:\/\//,
    );
  });

  it("RL and EVAL need an environment; SFT does not", () => {
    expect(errorsOf(rl({ environmentId: "" })).environmentId).toBeDefined();
    const sft = validateJobForm({ ...INITIAL_VALUES, kind: "SFT", adapterId: "a" });
    expect(sft.ok).toBe(true);
    expect(sft.ok && "environmentId" in sft.request).toBe(false);
  });

  it("SFT conversations: bad JSON and a bad shape are both explained", () => {
    const base = { ...INITIAL_VALUES, kind: "SFT" as const, adapterId: "a" };
    expect(errorsOf({ ...base, conversations: "[{" }).conversations).toMatch(/^Not valid JSON/);
    expect(
      errorsOf({ ...base, conversations: '[{"messages":[{"role":"bot","content":"x"}]}]' }).conversations,
    ).toMatch(/^\[0\]\.messages\[0\]\.role: /);
  });

  it("EVAL bounds come from the protocol's schema", () => {
    const errors = errorsOf({
      ...INITIAL_VALUES,
      kind: "EVAL",
      adapterId: "a",
      environmentId: "e",
      evalGroups: "0",
    });
    expect(errors.evalGroups).toBe("Must be at least 1");
  });

  it("a name is sent trimmed; a blank one is left out for the server's default; a long one is refused", () => {
    const named = validateJobForm(rl({ name: "  baseline run " }));
    expect(named.ok && named.request.name).toBe("baseline run");
    const blank = validateJobForm(rl({ name: "   " }));
    expect(blank.ok && "name" in blank.request).toBe(false);
    expect(errorsOf(rl({ name: "x".repeat(129) })).name).toBe("At most 128 characters");
  });
});
