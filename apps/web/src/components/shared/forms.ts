// Form plumbing shared by every create form: text fields parsed by zod on the
// client before anything is sent, and server errors placed next to the field
// they name. The fields themselves are in fields.tsx, the submit cycle in
// use-create-form.ts.
import { z } from "zod";
import { errorCode, errorMessage } from "./api.ts";

/** Field name → message; FORM holds what belongs to no single field. */
export type FormErrors = Record<string, string>;
export const FORM = "_form";

/** A form's values as a call's input, or the errors by field. */
export type Parsed<T> = { ok: true; input: T } | { ok: false; errors: FormErrors };

/** The values checked by a zod schema: its output, or the first error of each field. */
export function parseWith<S extends z.ZodType>(schema: S, values: unknown): Parsed<z.output<S>> {
  const parsed = schema.safeParse(values);
  return parsed.success ? { ok: true, input: parsed.data } : { ok: false, errors: zodErrors(parsed.error) };
}

/** The first issue of each top-level field (nested paths report at their last key). */
export function zodErrors(error: z.ZodError): FormErrors {
  const errors: FormErrors = {};
  for (const issue of error.issues) {
    const key = String(issue.path.at(-1) ?? FORM);
    errors[key] ??= issue.message;
  }
  return errors;
}

/**
 * Where a server error goes: `byCode` places known codes (CONFLICT on the name),
 * a "field: reason" message goes to that field when the form has it, anything
 * else to the whole form.
 */
export function serverErrors(
  error: unknown,
  fields: readonly string[],
  byCode: Record<string, { field: string; message: string }> = {},
): FormErrors {
  const known = byCode[errorCode(error) ?? ""];
  if (known) return { [known.field]: known.message };
  const message = errorMessage(error);
  const match = /^([A-Za-z]\w*): (.+)$/s.exec(message);
  if (match?.[1] && match[2] && fields.includes(match[1])) return { [match[1]]: match[2] };
  return { [FORM]: message };
}

/** Moves focus to the first field with an error, so keyboard users land on it. */
export function focusFirstError(form: HTMLFormElement, errors: FormErrors): void {
  for (const element of Array.from(form.elements)) {
    const name = (element as HTMLInputElement).name;
    if (name && errors[name] && element instanceof HTMLElement) {
      element.focus();
      return;
    }
  }
}

const WHOLE = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** The text of a number field: a whole (or decimal) number within [min, max]. */
export function numberText({
  integer,
  min,
  max,
  above,
}: {
  integer: boolean;
  min?: number | null;
  max?: number | null;
  /** Exclusive lower bound. */
  above?: number;
}) {
  let number = z.number();
  if (min !== undefined && min !== null && Number.isFinite(min))
    number = number.min(min, `Must be at least ${min}`);
  if (max !== undefined && max !== null && Number.isFinite(max))
    number = number.max(max, `Must be at most ${max}`);
  if (above !== undefined) number = number.gt(above, `Must be greater than ${above}`);
  return z
    .string()
    .trim()
    .min(1, "Required")
    .regex(integer ? WHOLE : DECIMAL, integer ? "Enter a whole number" : "Enter a number")
    .transform(Number)
    .pipe(number);
}

/** Like numberText, but an empty field means "not set". */
export function optionalNumberText(options: Parameters<typeof numberText>[0]) {
  return z
    .string()
    .trim()
    .transform((s) => (s === "" ? undefined : s))
    .pipe(numberText(options).optional());
}

/** The form's text values by field name (checkboxes: "on" or absent). */
export function formValues(form: HTMLFormElement): Record<string, string> {
  const values: Record<string, string> = {};
  for (const [key, value] of new FormData(form)) if (typeof value === "string") values[key] = value;
  return values;
}

/**
 * A zod issue of a protocol schema in the words a person filling a form
 * expects ("Must be at most 1"); a string's or a list's bound keeps the
 * schema's own message ("type a prompt").
 */
export function issueText(issue: z.core.$ZodIssue): string {
  switch (issue.code) {
    case "invalid_type":
      if (issue.input === undefined) return "Required";
      return issue.expected === "int" ? "Enter a whole number" : `Expected ${issue.expected}`;
    case "too_small":
      if (issue.origin !== "number") return issue.message;
      return `Must be ${issue.inclusive ? "at least" : "more than"} ${issue.minimum}`;
    case "too_big":
      if (issue.origin !== "number") return issue.message;
      return `Must be ${issue.inclusive ? "at most" : "less than"} ${issue.maximum}`;
    case "invalid_value":
      return `Must be one of ${issue.values.map((v) => JSON.stringify(v)).join(", ")}`;
    default:
      return issue.message;
  }
}
