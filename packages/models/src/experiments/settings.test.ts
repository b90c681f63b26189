// The experiment settings are made of the environments' presets (the numbers
// server-side jobs start from), not a copy of them.
import { loadBaseModel } from "@opentinker/engine";
import { DEFAULT_FORMAT_PENALTY } from "@opentinker/envs";
import { RL_PRESETS, type RlPreset } from "@opentinker/protocol";
import type { EnvGroupBuilder, RendererTokenizer, RlDataset } from "@opentinker/sdk";
import { describe, expect, it } from "vitest";
import { builtInModel, DEFAULT_TEXT_MODEL } from "../registry.ts";
import { PAIR_SETTINGS, SETTINGS } from "./settings.ts";
import { CHECK_BATCHES } from "./train-setting.ts";

const SETTING_OF: Record<keyof typeof RL_PRESETS, string> = {
  arithmetic: "arithmetic-lora-rl",
  "guess-number": "guess-number-lora-rl",
  nim: "nim-selfplay-lora-rl",
  shapes: "shapes-lora-rl",
  calculator: "calculator-lora-rl",
};

async function tokenizer(model: string): Promise<RendererTokenizer> {
  const built = builtInModel(model);
  const base = await loadBaseModel(built.dir, built.name);
  if (!base.tokenizer) throw new Error(`${model} has no tokenizer`);
  return base.tokenizer as RendererTokenizer;
}

describe("experiment settings and presets", () => {
  for (const [env, name] of Object.entries(SETTING_OF)) {
    it(`${name} trains and validates with the ${env} preset's numbers`, async () => {
      const preset: RlPreset = RL_PRESETS[env as keyof typeof RL_PRESETS];
      const setting = SETTINGS[name];
      if (!setting) throw new Error(`no setting ${name}`);
      expect(setting.lossFn).toBe(preset.config.lossFn);
      expect(setting.learningRate).toBe(preset.config.adam.learningRate);
      expect(setting.gradClipNorm ?? 0).toBe(preset.config.adam.gradClipNorm);
      expect(setting.referenceKl ?? 0).toBe(preset.config.referenceKl);
      expect(setting.steps).toBe(preset.config.steps);
      expect(setting.metric ?? "reward/mean").toBe(preset.metric);
      const ctx = { tokenizer: await tokenizer(setting.model ?? DEFAULT_TEXT_MODEL), seed: 1, steps: 3 };
      const train = setting.train(ctx);
      expect(train.batches).toBe(3);
      const trainGroups = train.batch(0);
      expect(trainGroups).toHaveLength(preset.config.groupsPerStep);
      const validation = setting.validation(ctx).batch(0);
      expect(validation).toHaveLength(preset.config.validation.groups);
      // The runner's start and end checks: more batches of the same split, each drawn anew.
      const checks = setting.validation(ctx, CHECK_BATCHES);
      expect(checks.batches).toBe(CHECK_BATCHES);
      expect(checks.batch(1)).toHaveLength(preset.config.validation.groups);
      // A group's size: attempts per prompt, or games per group (nim: each seat of a self-play game is an env).
      const envs = await (validation[0] as (typeof validation)[number]).makeEnvs();
      expect(envs.length % preset.config.validation.groupSize).toBe(0);
    });
  }
});

describe("pair settings", () => {
  it("run each member for its own setting's steps, so each trains as it would alone", () => {
    for (const pair of Object.values(PAIR_SETTINGS)) {
      const steps = pair.pair.map((name) => SETTINGS[name]?.steps ?? Number.NaN);
      expect(pair.steps).toBe(Math.max(...steps));
    }
  });
});

describe("a training format penalty", () => {
  it("is the reward of a malformed training episode, while validation keeps the environment's", async () => {
    const setting = SETTINGS["arithmetic-lora-rl"];
    if (!setting) throw new Error("no arithmetic-lora-rl");
    const tok = await tokenizer(DEFAULT_TEXT_MODEL);
    const ctx = { tokenizer: tok, seed: 1, steps: 1, training: { formatPenalty: -1 } };
    // Not a number and no end of turn: malformed either way.
    const action = tok.encode("seven", { addSpecialTokens: false });
    const malformedReward = async (dataset: RlDataset) => {
      const [env] = await (dataset.batch(0)[0] as EnvGroupBuilder).makeEnvs();
      if (!env) throw new Error("no env");
      await env.initialObservation();
      return (await env.step(action)).reward;
    };
    expect(await malformedReward(setting.train(ctx))).toBe(-1);
    expect(await malformedReward(setting.validation(ctx))).toBe(DEFAULT_FORMAT_PENALTY);
  });
});

describe("training groups per step", () => {
  it("change the training batches only, in the preset's settings and in nim's self-play", async () => {
    const tok = await tokenizer(DEFAULT_TEXT_MODEL);
    const ctx = { tokenizer: tok, seed: 1, steps: 1, training: { groupsPerStep: 3 } };
    for (const name of ["guess-number-lora-rl", "nim-selfplay-lora-rl"]) {
      const setting = SETTINGS[name];
      if (!setting) throw new Error(`no ${name}`);
      expect(setting.train(ctx).batch(0), name).toHaveLength(3);
      expect(setting.validation(ctx).batch(0), name).toHaveLength(
        setting.validation({ tokenizer: tok, seed: 1, steps: 1 }).batch(0).length,
      );
    }
  });
});
