// Checks a service runs before accepting a call, so that a bad request is
// refused with a message naming the field instead of failing later on a worker.
import type { Datum } from "./datum.ts";
import { LOSS_INPUTS, type LossFn } from "./losses.ts";
import { type ModelInput, modelInputLength } from "./model-input.ts";

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

/**
 * Every datum has the inputs its loss needs, each with one value per position,
 * and only in-vocabulary tokens; the first problem as a message, or null.
 */
export function datumsError(data: readonly Datum[], lossFn: LossFn, vocabSize: number): string | null {
  for (const [d, datum] of data.entries()) {
    const at = `data.${d}`;
    const positions = modelInputLength(datum.modelInput);
    if (positions === 0) return `${at}.modelInput: is empty`;
    const tokens = tokenRangeError(datum.modelInput, vocabSize, `${at}.modelInput`);
    if (tokens) return tokens;
    for (const name of LOSS_INPUTS[lossFn]) {
      const tensor = datum.lossFnInputs[name];
      if (!tensor) return `${at}.lossFnInputs.${name}: is required by the ${lossFn} loss`;
      if (tensor.data.length !== positions)
        return `${at}.lossFnInputs.${name}: has ${tensor.data.length} values, the model input has ${positions} positions`;
      if (tensor.data.some((v) => !Number.isFinite(v)))
        return `${at}.lossFnInputs.${name}: has a non-finite value`;
    }
    const targets = datum.lossFnInputs.targetTokens?.data ?? [];
    const bad = targets.findIndex((t) => t < 0 || t >= vocabSize || !Number.isInteger(t));
    if (bad >= 0)
      return `${at}.lossFnInputs.targetTokens.data.${bad}: token id ${targets[bad]} is out of range (vocabulary size ${vocabSize})`;
  }
  return null;
}
