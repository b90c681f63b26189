import { z } from "zod";
import {
  dropLastTokens,
  type ModelInput,
  modelInputFromTokens,
  modelInputLength,
  ZModelInput,
} from "./model-input.ts";
import { float32Tensor, int64Tensor, type TensorData, ZTensorData } from "./tensor.ts";

/** One training example: the model input and the loss inputs on its target axis. */
export const ZDatum = z.object({
  modelInput: ZModelInput,
  lossFnInputs: z.record(z.string(), ZTensorData),
});
export type Datum = z.infer<typeof ZDatum>;

/**
 * A whole sequence z[0..n) with one value per position. Per-position fields
 * describe the token at that position (e.g. its weight, or the logprob the
 * sampler gave it). Positions covered by an image hold a placeholder token.
 */
export interface Sequence {
  input: ModelInput;
  /** z[0..n): the token at each position; image positions may hold any id (placeholder). */
  tokens: readonly number[];
}

function check(cond: boolean, message: string): asserts cond {
  if (!cond) throw new RangeError(message);
}

function checkFinite(values: readonly number[], name: string, builder: string): void {
  for (const [i, v] of values.entries()) {
    check(Number.isFinite(v), `${builder}: ${name}[${i}] is ${v}, expected a finite number`);
  }
}

function sequenceOf(builder: string, tokensOrInput: readonly number[] | Sequence): Sequence {
  const seq = Array.isArray(tokensOrInput)
    ? {
        input: modelInputFromTokens(tokensOrInput as readonly number[]),
        tokens: tokensOrInput as readonly number[],
      }
    : (tokensOrInput as Sequence);
  const n = modelInputLength(seq.input);
  check(
    seq.tokens.length === n,
    `${builder}: tokens has ${seq.tokens.length} entries, the input has ${n} positions`,
  );
  check(n >= 2, `${builder}: a sequence needs at least 2 tokens (got ${n})`);
  for (const [i, t] of seq.tokens.entries())
    check(Number.isInteger(t) && t >= 0, `${builder}: tokens[${i}] is ${t}`);
  return seq;
}

/** C6: input = z[0..n-2]; per-position values move onto targets z[1..n-1]. */
const shift = (values: readonly number[]) => values.slice(1);

export interface SftDatumInput {
  /** The sequence: tokens, or a multimodal input with its per-position tokens. */
  sequence: readonly number[] | Sequence;
  /** Per position: 0 for prompt/observation/tool tokens, > 0 for demonstrated actions. */
  weights: readonly number[];
}

/** An SFT datum: targetTokens and weights on the target axis (C6). */
export function buildSftDatum({ sequence, weights }: SftDatumInput): Datum {
  const seq = sequenceOf("buildSftDatum", sequence);
  check(
    weights.length === seq.tokens.length,
    `buildSftDatum: weights has ${weights.length} entries, tokens has ${seq.tokens.length}`,
  );
  checkFinite(weights, "weights", "buildSftDatum");
  for (const [i, w] of weights.entries())
    check(w >= 0, `buildSftDatum: weights[${i}] is ${w}, weights must be ≥ 0`);
  return {
    modelInput: dropLastTokens(seq.input, 1),
    lossFnInputs: { targetTokens: int64Tensor(shift(seq.tokens)), weights: float32Tensor(shift(weights)) },
  };
}

export interface RlDatumInput {
  sequence: readonly number[] | Sequence;
  /** Per position: 1 for tokens the policy generated (actions), 0 elsewhere. Never inferred from advantages. */
  mask: readonly number[];
  /** Per position: the rollout policy's logprob of the token (0 off the mask). */
  logprobs: readonly number[];
  /** Per position, or one number for the whole trajectory (applied on the mask). */
  advantages: readonly number[] | number;
  /**
   * "responseLength": divide advantages by the number of action tokens, for
   * losses that sum over tokens (C6). "none" (default): send them as they are.
   */
  normalize?: "none" | "responseLength";
}

/** An RL datum: targetTokens, logprobs, advantages and an explicit mask (C6). */
export function buildRlDatum(input: RlDatumInput): Datum {
  const seq = sequenceOf("buildRlDatum", input.sequence);
  const n = seq.tokens.length;
  for (const [name, values] of [
    ["mask", input.mask],
    ["logprobs", input.logprobs],
  ] as const) {
    check(values.length === n, `buildRlDatum: ${name} has ${values.length} entries, tokens has ${n}`);
  }
  for (const [i, m] of input.mask.entries())
    check(m === 0 || m === 1, `buildRlDatum: mask[${i}] is ${m}, expected 0 or 1`);
  checkFinite(input.logprobs, "logprobs", "buildRlDatum");
  const scalar = input.advantages;
  if (typeof scalar === "number") checkFinite([scalar], "advantages", "buildRlDatum");
  const perToken = typeof scalar === "number" ? input.mask.map((m) => (m ? scalar : 0)) : scalar;
  check(perToken.length === n, `buildRlDatum: advantages has ${perToken.length} entries, tokens has ${n}`);
  checkFinite(perToken, "advantages", "buildRlDatum");
  check(input.mask[0] === 0, "buildRlDatum: mask[0] must be 0 (the first token has no prediction to train)");
  const actions = input.mask.reduce((a, b) => a + b, 0);
  const divisor = input.normalize === "responseLength" && actions > 0 ? actions : 1;
  return {
    modelInput: dropLastTokens(seq.input, 1),
    lossFnInputs: {
      targetTokens: int64Tensor(shift(seq.tokens)),
      logprobs: float32Tensor(shift(input.logprobs)),
      advantages: float32Tensor(shift(perToken).map((a, i) => (input.mask[i + 1] ? a / divisor : 0))),
      mask: float32Tensor(shift(input.mask)),
    },
  };
}

/** A loss input's values, checked to be on the datum's target axis. */
export function lossInput(datum: Datum, name: string, context = "datum"): number[] {
  const tensor: TensorData | undefined = datum.lossFnInputs[name];
  if (!tensor) throw new RangeError(`${context}: lossFnInputs.${name} is missing`);
  const targets = modelInputLength(datum.modelInput);
  if (tensor.data.length !== targets) {
    throw new RangeError(
      `${context}: lossFnInputs.${name} has ${tensor.data.length} values, the input has ${targets} positions`,
    );
  }
  return tensor.data;
}
