"use client";
// The submit cycle of every create form: check the fields here first (nothing
// is sent while one is wrong), send the tRPC mutation, then either reset the
// form and keep what was created, or place the server's errors next to the
// field they name. Focus follows the errors, so keyboard users land on them.
import { type QueryKey, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { type FormErrors, focusFirstError, formValues, type Parsed, serverErrors } from "./forms.ts";

/** The part of a TanStack mutation the cycle drives. */
export interface CreateMutation<TInput, TOutput> {
  mutate(
    input: TInput,
    handlers: { onSuccess: (output: TOutput) => Promise<void>; onError: (error: unknown) => void },
  ): void;
  isPending: boolean;
}

export interface CreateFormOptions<TInput, TOutput> {
  mutation: CreateMutation<TInput, TOutput>;
  /** The form's text values (formValues) as the mutation's input, or the errors by field. */
  parse: (values: Record<string, string>) => Parsed<NoInfer<TInput>>;
  /** The fields a server error may name ("name: …" lands on the name field). */
  fields: readonly string[];
  /** Known error codes and where they go (CONFLICT on the name). */
  byCode?: Record<string, { field: string; message: string }>;
  /** The list the new object joins, fetched again after a success. */
  refresh: QueryKey;
  /** After a success and the form's reset: reset the fields the form controls. */
  onCreated?: (output: TOutput) => void;
  /**
   * Keep the last result on screen while the next attempt is still invalid:
   * an API key is shown once, and a mistyped next name must not hide it.
   */
  keepCreatedWhileInvalid?: boolean;
}

export function useCreateForm<TInput, TOutput>(options: CreateFormOptions<TInput, TOutput>) {
  const { mutation, parse, fields, byCode, refresh, onCreated, keepCreatedWhileInvalid = false } = options;
  const queryClient = useQueryClient();
  const [errors, setErrors] = useState<FormErrors>({});
  const [created, setCreated] = useState<TOutput | null>(null);

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const show = (found: FormErrors) => {
      setErrors(found);
      focusFirstError(form, found);
    };
    if (!keepCreatedWhileInvalid) setCreated(null);
    const parsed = parse(formValues(form));
    if (!parsed.ok) return show(parsed.errors);
    setErrors({});
    setCreated(null);
    mutation.mutate(parsed.input, {
      onSuccess: async (output) => {
        form.reset();
        setCreated(output);
        onCreated?.(output);
        await queryClient.invalidateQueries({ queryKey: refresh });
      },
      onError: (error) => show(serverErrors(error, fields, byCode)),
    });
  }

  return { errors, setErrors, created, setCreated, submit, pending: mutation.isPending };
}
