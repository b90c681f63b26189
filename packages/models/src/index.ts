// @opentinker/models: the built-in base models (see README.md): their registry,
// the recipes and build that produce them, and their starting evaluation.
export { type BuildResult, buildTextModel, type TextModelRecipe } from "./build/build-text-model.ts";
export { buildVlModel, type VlModelRecipe } from "./build/build-vl-model.ts";
export { CHECKSUMS_FILE, type Checksums, compareChecksums, readChecksums } from "./build/checksums.ts";
export { ALL_TEXT_TASKS, evaluateTextTasks, type TaskScore, TEXT_TASKS, type TextTask } from "./evaluate.ts";
export { evaluateShapes, type ShapesScore } from "./evaluate-shapes.ts";
export { TEXT_RECIPES, TEXT_TINY, TOOL_TINY } from "./recipes.ts";
export * from "./registry.ts";
export { SHAPES_VL_TINY, VL_RECIPES } from "./vl-recipes.ts";
