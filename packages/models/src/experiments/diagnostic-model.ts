// Builds a variant of a built-in text model's recipe for a diagnosis in
// docs/results.md ("What falls short"), logging its progress to stderr.
import path from "node:path";
import { buildTextModel, type TextModelRecipe } from "../build/build-text-model.ts";

export async function buildDiagnosticModel(recipe: TextModelRecipe, out: string): Promise<void> {
  const steps = recipe.pretrain.steps;
  const log = (line: string) => console.error(`${recipe.name}: ${line}`);
  const result = await buildTextModel(recipe, path.resolve(out), log, (s) => {
    if ((s.step + 1) % 500 === 0) log(`step ${s.step + 1}/${steps} loss ${s.loss.toFixed(4)}`);
  });
  log(`done in ${result.seconds.toFixed(0)} s → ${path.resolve(out)}`);
}
