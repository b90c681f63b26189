"use client";
// The fields every dashboard form is built from: a label, the control, a hint
// or the field's error right under it (wired for screen readers), the choices
// of a radio group, the form-level error, the success notice and the submit
// button that says when the call is on its way.
import type { InputHTMLAttributes, ReactNode, SelectHTMLAttributes } from "react";
import { Button, ErrorState } from "../ui.tsx";
import { FORM, type FormErrors } from "./forms.ts";

export const INPUT = "mt-1 w-full rounded border border-gray-300 bg-white px-3 py-2 text-sm";

/** Field name → message, as a form keeps them (absent: no error). */
export type FieldErrorMap = Readonly<Partial<Record<string, string>>>;

/** A labelled form field with its error right next to it. */
export function Field({
  label,
  name,
  error,
  hint,
  children,
}: {
  label: string;
  name: string;
  error?: string | undefined;
  hint?: string | undefined;
  children: ReactNode;
}) {
  return (
    <label className="block" htmlFor={name}>
      <span className="text-sm font-medium">{label}</span>
      {children}
      {hint && !error && <span className="mt-1 block text-xs text-gray-500">{hint}</span>}
      {error && (
        <span role="alert" id={`${name}-error`} className="mt-1 block text-xs text-red-700">
          {error}
        </span>
      )}
    </label>
  );
}

/** What a control needs to name its field and point at its error. */
function controlProps(name: string, errors: FieldErrorMap) {
  const error = errors[name];
  return {
    id: name,
    name,
    "aria-invalid": error ? true : undefined,
    "aria-describedby": error ? `${name}-error` : undefined,
    className: INPUT,
  };
}

const NO_ERRORS: FieldErrorMap = {};

/** A labelled text input with its error next to it; `numeric` for numbers typed as text. */
export function TextField({
  label,
  name,
  errors = NO_ERRORS,
  hint,
  numeric,
  ...input
}: {
  label: string;
  name: string;
  /** The form's errors (none: a form whose errors are its own, such as sign-in's). */
  errors?: FieldErrorMap;
  hint?: string | undefined;
  /** "numeric" (whole numbers) or "decimal": the keyboard a phone shows. */
  numeric?: "numeric" | "decimal" | undefined;
} & Omit<InputHTMLAttributes<HTMLInputElement>, "name" | "id">) {
  return (
    <Field label={label} name={name} error={errors[name]} hint={hint}>
      <input type="text" inputMode={numeric} {...controlProps(name, errors)} {...input} />
    </Field>
  );
}

export interface Choice {
  value: string;
  label: string;
}

/** A select's options, one per choice. */
export function ChoiceOptions({ choices }: { choices: readonly Choice[] }) {
  return choices.map((c) => (
    <option key={c.value} value={c.value}>
      {c.label}
    </option>
  ));
}

/**
 * A labelled select: `choices` become its options, after any `children` (a
 * placeholder option). `problem` is shown when the field has no error of its
 * own, such as a list of choices that did not load.
 */
export function SelectField({
  label,
  name,
  errors,
  problem,
  choices = [],
  children,
  ...select
}: {
  label: string;
  name: string;
  errors: FieldErrorMap;
  problem?: string | undefined;
  choices?: readonly Choice[] | undefined;
  children?: ReactNode;
} & Omit<SelectHTMLAttributes<HTMLSelectElement>, "name" | "id">) {
  return (
    <Field label={label} name={name} error={errors[name] ?? problem}>
      <select {...controlProps(name, errors)} {...select}>
        {children}
        <ChoiceOptions choices={choices} />
      </select>
    </Field>
  );
}

/** One choice of several as radio buttons under a legend; `children` follow the buttons. */
export function RadioGroup<V extends string>({
  legend,
  name,
  choices,
  value,
  onChange,
  children,
}: {
  legend: string;
  name: string;
  choices: readonly { value: V; label: string }[];
  value: V;
  onChange: (value: V) => void;
  children?: ReactNode;
}) {
  return (
    <fieldset>
      <legend className="text-sm font-medium">{legend}</legend>
      <div className="mt-1 flex flex-wrap gap-4 text-sm">
        {choices.map((c) => (
          <label key={c.value} className="flex items-center gap-2">
            <input
              type="radio"
              name={name}
              value={c.value}
              checked={value === c.value}
              onChange={() => onChange(c.value)}
            />
            {c.label}
          </label>
        ))}
      </div>
      {children}
    </fieldset>
  );
}

/** A form-level error, or nothing. */
export function FormError({ errors }: { errors: FormErrors }) {
  const message = errors[FORM];
  return message ? <ErrorState error={message} /> : null;
}

/** What a form just created, said politely to screen readers. */
export function CreatedNotice({ children }: { children: ReactNode }) {
  return (
    <p role="status" className="rounded border border-green-200 bg-green-50 p-3 text-sm text-green-800">
      {children}
    </p>
  );
}

/** A create form's submit button: "Creating…" and disabled while its call is on its way. */
export function SubmitButton({
  label,
  pending,
  disabled = false,
}: {
  label: string;
  pending: boolean;
  disabled?: boolean;
}) {
  return (
    <Button type="submit" disabled={pending || disabled}>
      {pending ? "Creating…" : label}
    </Button>
  );
}
