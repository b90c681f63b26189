// The dashboard shows each environment field's default from the protocol's
// BUILTIN_CONFIG_DEFAULTS (the web imports no environment code): these hold it
// equal to what the environments do when the field is absent.
import { BUILTIN_CONFIG_DEFAULTS, BUILTIN_DESCRIPTIONS, builtinConfigDefault } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { ARITHMETIC_MAX_OPERAND, ARITHMETIC_OPS, type ArithmeticOp } from "./arithmetic.ts";
import { CALCULATOR_CALL_COST, CALCULATOR_MAX_CALLS, CALCULATOR_MAX_TOKENS } from "./calculator.ts";
import {
  GUESS_FORMAT_PENALTY,
  GUESS_MAX_TURNS,
  GUESS_RANGES,
  GUESS_VALIDATION_RANGE,
} from "./guess-number.ts";
import { NIM_ILLEGAL_PENALTY } from "./nim.ts";
import { DEFAULT_FORMAT_PENALTY, DEFAULT_MAX_TOKENS } from "./text-env.ts";

describe("the built-in environments' defaults, as the protocol states them", () => {
  it("match the constants the environments apply", () => {
    expect(BUILTIN_CONFIG_DEFAULTS.maxOperand).toBe(ARITHMETIC_MAX_OPERAND);
    expect(BUILTIN_CONFIG_DEFAULTS.formatPenalty).toBe(DEFAULT_FORMAT_PENALTY);
    expect(BUILTIN_CONFIG_DEFAULTS.maxTokens).toBe(DEFAULT_MAX_TOKENS);
    expect(BUILTIN_CONFIG_DEFAULTS.maxGuesses).toBe(GUESS_MAX_TURNS);
    expect(BUILTIN_CONFIG_DEFAULTS.illegalPenalty).toBe(NIM_ILLEGAL_PENALTY);
    expect(BUILTIN_CONFIG_DEFAULTS.maxNumber).toBe(
      `drawn per game from ${GUESS_RANGES.join(", ")} (${GUESS_VALIDATION_RANGE} held out for validation)`,
    );
    expect(BUILTIN_CONFIG_DEFAULTS.callCost).toBe(CALCULATOR_CALL_COST);
    expect(BUILTIN_CONFIG_DEFAULTS.maxCalls).toBe(CALCULATOR_MAX_CALLS);
  });

  it("state where one built-in's default differs from the others'", () => {
    expect(builtinConfigDefault("calculator", "maxTokens")).toBe(CALCULATOR_MAX_TOKENS);
    expect(builtinConfigDefault("arithmetic", "maxTokens")).toBe(DEFAULT_MAX_TOKENS);
    expect(builtinConfigDefault("guess-number", "formatPenalty")).toBe(GUESS_FORMAT_PENALTY);
    expect(builtinConfigDefault("arithmetic", "formatPenalty")).toBe(DEFAULT_FORMAT_PENALTY);
  });
});

describe("the built-in environments' descriptions, as the dashboard shows them", () => {
  it("name every operator the arithmetic prompts use", () => {
    const verbs: Record<ArithmeticOp, string> = { "+": "add", "-": "subtract", "*": "multiply" };
    for (const op of ARITHMETIC_OPS) expect(BUILTIN_DESCRIPTIONS.arithmetic).toContain(verbs[op]);
  });
});
