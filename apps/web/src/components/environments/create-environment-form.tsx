"use client";
// Creates an environment: a built-in kind with its config, or a remote server
// by URL. Checked here first (the protocol's own schema has the last word
// before sending); the server's allow-list refusal lands next to the URL.
import { ZEnvironmentInput } from "@opentinker/protocol";
import { useMutation, useQueryClient } from "@tanstack/react-query";
import { type FormEvent, useState } from "react";
import { z } from "zod";
import { useTRPC } from "../../lib/trpc.ts";
import {
  FormError,
  type FormErrors,
  focusFirstError,
  formValues,
  serverErrors,
  TextField,
  zodErrors,
} from "../shared/forms.tsx";
import { Button, Field, INPUT } from "../ui.tsx";
import {
  BUILTIN_ENVIRONMENTS,
  BUILTIN_LABEL,
  type BuiltinEnvironment,
  CONFIG_FIELDS,
  CONFIG_LABEL,
  configSchema,
  describeBounds,
} from "./builtin-config.ts";

type Kind = "BUILTIN" | "REMOTE";

const ZName = z.string().trim().min(1, "Required").max(128, "At most 128 characters");
const ZUrl = z.url({ protocol: /^https?$/, error: "Enter an http:// or https:// URL" });

/** The form's values as the environments.create input, or the errors by field. */
function parse(
  values: Record<string, string>,
  kind: Kind,
  builtin: BuiltinEnvironment,
): { ok: true; input: z.input<typeof ZEnvironmentInput> } | { ok: false; errors: FormErrors } {
  const fields =
    kind === "BUILTIN"
      ? z.object({ name: ZName, config: configSchema(builtin) })
      : z.object({ name: ZName, url: z.string().trim().pipe(ZUrl) });
  const parsed = fields.safeParse({ ...values, config: values });
  if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
  const data = parsed.data as { name: string; url?: string; config?: Record<string, number | undefined> };
  const input =
    kind === "BUILTIN"
      ? {
          name: data.name,
          kind,
          builtin,
          config: Object.fromEntries(Object.entries(data.config ?? {}).filter(([, v]) => v !== undefined)),
        }
      : { name: data.name, kind, url: data.url ?? "" };
  const checked = ZEnvironmentInput.safeParse(input);
  return checked.success ? { ok: true, input } : { ok: false, errors: zodErrors(checked.error) };
}

export function CreateEnvironmentForm() {
  const trpc = useTRPC();
  const queryClient = useQueryClient();
  const [kind, setKind] = useState<Kind>("BUILTIN");
  const [builtin, setBuiltin] = useState<BuiltinEnvironment>("arithmetic");
  const [errors, setErrors] = useState<FormErrors>({});
  const [created, setCreated] = useState<string | null>(null);
  const create = useMutation(trpc.environments.create.mutationOptions());

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    setCreated(null);
    const result = parse(formValues(form), kind, builtin);
    if (!result.ok) {
      setErrors(result.errors);
      focusFirstError(form, result.errors);
      return;
    }
    setErrors({});
    create.mutate(result.input, {
      onSuccess: async (environment) => {
        form.reset();
        setCreated(environment.name);
        await queryClient.invalidateQueries({ queryKey: trpc.environments.list.queryKey() });
      },
      onError: (error) => {
        const found = serverErrors(error, ["name", "url", ...CONFIG_FIELDS[builtin]], {
          CONFLICT: { field: "name", message: "An environment with this name already exists" },
        });
        setErrors(found);
        focusFirstError(form, found);
      },
    });
  }

  return (
    <form onSubmit={submit} noValidate className="space-y-4">
      <TextField label="Name" name="name" errors={errors} autoComplete="off" />
      <fieldset>
        <legend className="text-sm font-medium">Type</legend>
        <div className="mt-1 flex flex-wrap gap-4 text-sm">
          {(
            [
              ["BUILTIN", "Built-in"],
              ["REMOTE", "Remote"],
            ] as const
          ).map(([value, label]) => (
            <label key={value} className="flex items-center gap-2">
              <input
                type="radio"
                name="kind"
                value={value}
                checked={kind === value}
                onChange={() => {
                  setKind(value);
                  setErrors({});
                }}
              />
              {label}
            </label>
          ))}
        </div>
      </fieldset>
      {kind === "BUILTIN" ? (
        <>
          <Field label="Environment" name="builtin">
            <select
              id="builtin"
              name="builtin"
              value={builtin}
              onChange={(e) => {
                setBuiltin(e.target.value as BuiltinEnvironment);
                setErrors({});
              }}
              className={INPUT}
            >
              {BUILTIN_ENVIRONMENTS.map((b) => (
                <option key={b} value={b}>
                  {BUILTIN_LABEL[b]}
                </option>
              ))}
            </select>
          </Field>
          <fieldset className="space-y-3">
            <legend className="text-sm font-medium">Config</legend>
            <p className="text-xs text-gray-500">Leave a field empty for the environment's default.</p>
            <div className="grid gap-4 sm:grid-cols-2">
              {CONFIG_FIELDS[builtin].map((key) => (
                <TextField
                  key={`${builtin}-${key}`}
                  label={CONFIG_LABEL[key].label}
                  name={key}
                  errors={errors}
                  // A penalty is usually negative: a phone's numeric pads have no minus sign.
                  numeric={key === "formatPenalty" ? undefined : "numeric"}
                  hint={`${CONFIG_LABEL[key].about} (${describeBounds(key)})`}
                />
              ))}
            </div>
          </fieldset>
        </>
      ) : (
        <TextField
          label="URL"
          name="url"
          errors={errors}
          type="url"
          inputMode="url"
          placeholder="https://env.example.com"
          hint="Its server answers POST <url>/reset and <url>/step; the operator must allow its host."
        />
      )}
      <FormError errors={errors} />
      {created && (
        <p role="status" className="rounded border border-green-200 bg-green-50 p-3 text-sm text-green-800">
          Created environment {created}.
        </p>
      )}
      <Button type="submit" disabled={create.isPending}>
        {create.isPending ? "Creating…" : "Create environment"}
      </Button>
    </form>
  );
}
