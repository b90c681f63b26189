// PPO-ptx for a run: each RL step's gradient also takes a batch of the base
// model's own pretraining corpus (cross_entropy), so the policy keeps its
// language on inputs RL does not sample while RL moves the rest.
import { seededRandom } from "@opentinker/envs";
import { buildSftDatum, type Datum } from "@opentinker/protocol";
import type { RendererTokenizer } from "@opentinker/sdk";
import { type Example, shuffle, textCorpus } from "../corpus/index.ts";
import { TEXT_RECIPES } from "../recipes.ts";

/** Pretraining examples per RL step (the built-in models' pretraining batch). */
export const MIX_BATCH = 32;

/**
 * Step `step`'s batch of the pretraining corpus, every answer token weighted
 * `weight`: the weight an RL action token has per unit of advantage, so
 * `weight` reads as "a pretraining answer counts like an action with this advantage".
 */
export async function pretrainMix(
  baseModel: string,
  tokenizer: RendererTokenizer,
  seed: number,
  weight: number,
): Promise<(step: number) => Datum[]> {
  const recipes = Object.values(TEXT_RECIPES);
  const recipe = recipes.find((r) => r.name === baseModel);
  if (!recipe)
    throw new RangeError(
      `a pretraining mix needs a built-in text model's corpus; "${baseModel}" has none (known: ${recipes.map((r) => r.name).join(", ")})`,
    );
  // The run's own order of the corpus, so seeds differ as their rollouts do.
  const examples = shuffle(await textCorpus(tokenizer, recipe.corpus), seededRandom(seed * 7919 + 29));
  return (step) =>
    Array.from({ length: MIX_BATCH }, (_, i) => {
      const e = examples[(step * MIX_BATCH + i) % examples.length] as Example;
      return buildSftDatum({ sequence: e.tokens, weights: e.weights.map((w) => w * weight) });
    });
}
