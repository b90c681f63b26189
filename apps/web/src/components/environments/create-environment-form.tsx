"use client";
// Creates an environment: a built-in kind with its config, or a remote server
// by URL. Checked here first (the protocol's own schema has the last word
// before sending); the server's allow-list refusal lands next to the URL.
import { ZEnvironmentInput } from "@opentinker/protocol";
import { useMutation } from "@tanstack/react-query";
import { useState } from "react";
import { z } from "zod";
import { useTRPC } from "../../lib/trpc.ts";
import {
  CreatedNotice,
  type FieldErrorMap,
  FormError,
  RadioGroup,
  SelectField,
  SubmitButton,
  TextField,
} from "../shared/fields.tsx";
import { type Parsed, zodErrors } from "../shared/forms.ts";
import { useCreateForm } from "../shared/use-create-form.ts";
import {
  BUILTIN_ABOUT,
  BUILTIN_ENVIRONMENTS,
  BUILTIN_LABEL,
  type BuiltinEnvironment,
  CONFIG_FIELDS,
  CONFIG_LABEL,
  type ConfigKey,
  choicesOf,
  configSchema,
  defaultPlaceholder,
  describeDefault,
  fieldHint,
  isChoiceField,
} from "./builtin-config.ts";

type Kind = "BUILTIN" | "REMOTE";

const KINDS = [
  { value: "BUILTIN", label: "Built-in" },
  { value: "REMOTE", label: "Remote" },
] as const;

const BUILTIN_CHOICES = BUILTIN_ENVIRONMENTS.map((b) => ({ value: b, label: BUILTIN_LABEL[b] }));

const ZName = z.string().trim().min(1, "Required").max(128, "At most 128 characters");
const ZUrl = z.url({ protocol: /^https?$/, error: "Enter an http:// or https:// URL" });

/** The form's values as the environments.create input, or the errors by field. */
function parse(
  values: Record<string, string>,
  kind: Kind,
  builtin: BuiltinEnvironment,
): Parsed<z.input<typeof ZEnvironmentInput>> {
  const fields =
    kind === "BUILTIN"
      ? z.object({ name: ZName, config: configSchema(builtin) })
      : z.object({ name: ZName, url: z.string().trim().pipe(ZUrl) });
  const parsed = fields.safeParse({ ...values, config: values });
  if (!parsed.success) return { ok: false, errors: zodErrors(parsed.error) };
  const data = parsed.data as { name: string; url?: string; config?: Record<string, unknown> };
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
  const [kind, setKind] = useState<Kind>("BUILTIN");
  const [builtin, setBuiltin] = useState<BuiltinEnvironment>("arithmetic");
  const { errors, setErrors, created, submit, pending } = useCreateForm({
    mutation: useMutation(trpc.environments.create.mutationOptions()),
    parse: (values) => parse(values, kind, builtin),
    fields: ["name", "url", ...CONFIG_FIELDS[builtin]],
    byCode: { CONFLICT: { field: "name", message: "An environment with this name already exists" } },
    refresh: trpc.environments.list.queryKey(),
  });

  return (
    <form onSubmit={submit} noValidate className="space-y-4">
      <TextField label="Name" name="name" errors={errors} autoComplete="off" />
      <RadioGroup
        legend="Type"
        name="kind"
        choices={KINDS}
        value={kind}
        onChange={(value) => {
          setKind(value);
          setErrors({});
        }}
      />
      {kind === "BUILTIN" ? (
        <>
          <SelectField
            label="Environment"
            name="builtin"
            errors={errors}
            choices={BUILTIN_CHOICES}
            value={builtin}
            onChange={(e) => {
              setBuiltin(e.target.value as BuiltinEnvironment);
              setErrors({});
            }}
          />
          <p className="text-xs text-gray-600">{BUILTIN_ABOUT[builtin]}</p>
          <fieldset className="space-y-3">
            <legend className="text-sm font-medium">Config</legend>
            <p className="text-xs text-gray-500">Leave a field empty for the environment's default.</p>
            <div className="grid gap-4 sm:grid-cols-2">
              {CONFIG_FIELDS[builtin].map((key) => (
                <ConfigField key={`${builtin}-${key}`} builtin={builtin} field={key} errors={errors} />
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
      {created && <CreatedNotice>Created environment {created.name}.</CreatedNotice>}
      <SubmitButton label="Create environment" pending={pending} />
    </form>
  );
}

// Penalties are usually negative: a phone's numeric pads have no minus sign.
const SIGNED: readonly ConfigKey[] = ["formatPenalty", "illegalPenalty"];

/** One config field, with its default shown: a list (empty: the default) or a number typed as text. */
function ConfigField({
  builtin,
  field,
  errors,
}: {
  builtin: BuiltinEnvironment;
  field: ConfigKey;
  errors: FieldErrorMap;
}) {
  const { label } = CONFIG_LABEL[field];
  if (isChoiceField(field))
    return (
      <SelectField label={label} name={field} errors={errors} choices={choicesOf(field)} defaultValue="">
        <option value="">Default ({describeDefault(builtin, field)})</option>
      </SelectField>
    );
  return (
    <TextField
      label={label}
      name={field}
      errors={errors}
      numeric={SIGNED.includes(field) ? undefined : "numeric"}
      placeholder={defaultPlaceholder(builtin, field)}
      hint={fieldHint(builtin, field)}
    />
  );
}
