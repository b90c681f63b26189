// Checks a service runs before accepting a call, so that a bad request is
// refused with a message naming the field instead of failing later on a worker.
import type { Datum } from "./datum.ts";
import { LOSS_INPUTS, type LossFn } from "./losses.ts";
import { type ModelInput, modelInputLength } from "./model-input.ts";

/** What a call's inputs are checked against: the base model it runs on. */
export interface ModelLimits {
  /** The base model's name, for messages. */
  name: string;
  vocabSize: number;
  /** Positions the model attends over. */
  contextLength: number;
  /** Positions one image takes; null for a text-only model. */
  imageTokens: number | null;
}

/** The first text token outside [0, vocabSize), as a message naming where it is; or null. */
export function tokenRangeError(input: ModelInput, vocabSize: number, field: string): string | null {
  for (const [c, chunk] of input.chunks.entries()) {
    if (chunk.type !== "encoded_text") continue;
    const i = chunk.tokens.findIndex((t) => t >= vocabSize);
    if (i >= 0)
      return `${field}.chunks.${c}.tokens.${i}: token id ${chunk.tokens[i]} is out of range (vocabulary size ${vocabSize})`;
  }
  return null;
}

/** The first image chunk the model cannot take, as a message; or null. */
function imageError(input: ModelInput, model: ModelLimits, field: string): string | null {
  for (const [c, chunk] of input.chunks.entries()) {
    if (chunk.type !== "image") continue;
    if (model.imageTokens === null)
      return `${field}.chunks.${c}: is an image, but the base model ${model.name} takes no images`;
    if (chunk.expectedTokens !== model.imageTokens)
      return `${field}.chunks.${c}.expectedTokens: is ${chunk.expectedTokens}, but the base model ${model.name} gives an image ${model.imageTokens} positions`;
  }
  return null;
}

/**
 * A model input's first problem for this model, naming where it is; or null:
 * images the model cannot take, tokens outside its vocabulary, and a length
 * outside [min, max] positions (max is at most the model's context).
 */
export function modelInputError(
  input: ModelInput,
  model: ModelLimits,
  field: string,
  positions: { min: number; max: number },
): string | null {
  const problem = imageError(input, model, field) ?? tokenRangeError(input, model.vocabSize, field);
  if (problem) return problem;
  const n = modelInputLength(input);
  if (n === 0) return `${field}: is empty`;
  if (n < positions.min) return `${field}: has ${n} positions; needs at least ${positions.min}`;
  if (n > positions.max)
    return `${field}: has ${n} positions; at most ${positions.max} fit the base model ${model.name} (context ${model.contextLength})`;
  return null;
}

/** A sampling prompt: at least one position, and room left in the context for one more. */
export const samplePromptError = (prompt: ModelInput, model: ModelLimits) =>
  modelInputError(prompt, model, "prompt", { min: 1, max: model.contextLength - 1 });

/** A sequence to score: at least two positions (the first has no logprob), within the context. */
export const logprobSequenceError = (sequence: ModelInput, model: ModelLimits) =>
  modelInputError(sequence, model, "sequence", { min: 2, max: model.contextLength });

/**
 * Every datum fits the model and has the inputs its loss needs, each with one
 * value per position, and only in-vocabulary targets; the first problem as a
 * message, or null.
 */
export function datumsError(data: readonly Datum[], lossFn: LossFn, model: ModelLimits): string | null {
  for (const [d, datum] of data.entries()) {
    const at = `data.${d}`;
    const input = modelInputError(datum.modelInput, model, `${at}.modelInput`, {
      min: 1,
      max: model.contextLength,
    });
    if (input) return input;
    const positions = modelInputLength(datum.modelInput);
    for (const name of LOSS_INPUTS[lossFn]) {
      const tensor = datum.lossFnInputs[name];
      if (!tensor) return `${at}.lossFnInputs.${name}: is required by the ${lossFn} loss`;
      if (tensor.data.length !== positions)
        return `${at}.lossFnInputs.${name}: has ${tensor.data.length} values, the model input has ${positions} positions`;
      if (tensor.data.some((v) => !Number.isFinite(v)))
        return `${at}.lossFnInputs.${name}: has a non-finite value`;
    }
    const targets = datum.lossFnInputs.targetTokens?.data ?? [];
    const bad = targets.findIndex((t) => t < 0 || t >= model.vocabSize || !Number.isInteger(t));
    if (bad >= 0)
      return `${at}.lossFnInputs.targetTokens.data.${bad}: token id ${targets[bad]} is out of range (vocabulary size ${model.vocabSize})`;
  }
  return null;
}
