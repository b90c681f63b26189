"use client";
// Creates an adapter: checked here with zod first (nothing is sent while a field
// is wrong), then by the server, whose errors (name taken, quota) land in the form.
import { useMutation, useQuery } from "@tanstack/react-query";
import Link from "next/link";
import { useState } from "react";
import { z } from "zod";
import { useTRPC } from "../../lib/trpc.ts";
import {
  CreatedNotice,
  Field,
  FormError,
  RadioGroup,
  SelectField,
  SubmitButton,
  TextField,
} from "../shared/fields.tsx";
import { numberText, parseWith } from "../shared/forms.ts";
import { useCreateForm } from "../shared/use-create-form.ts";
import { ErrorState } from "../ui.tsx";

const checkbox = z
  .string()
  .optional()
  .transform((v) => v === "on");

const common = {
  baseModel: z.string().min(1, "Choose a base model"),
  name: z
    .string()
    .trim()
    .min(1, "Required")
    .max(128, "At most 128 characters")
    .regex(
      /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
      "Letters, digits, '.', '_' and '-', starting with a letter or digit",
    ),
  seed: numberText({ integer: true, min: 0, max: 2 ** 31 - 1 }),
};

/** The form's fields as the API's adapters.create input (same bounds as ZCreateAdapter). */
const ZAdapterForm = z.discriminatedUnion("kind", [
  z
    .object({
      ...common,
      kind: z.literal("LORA"),
      rank: numberText({ integer: true, min: 1, max: 1024 }),
      alpha: numberText({ integer: false, above: 0 }),
      trainAttn: checkbox,
      trainMlp: checkbox,
      trainUnembed: checkbox,
    })
    .refine((a) => a.trainAttn || a.trainMlp || a.trainUnembed, {
      path: ["targets"],
      message: "Choose at least one target module",
    }),
  z.object({ ...common, kind: z.literal("FULL") }),
]);

const FIELDS = ["baseModel", "name", "kind", "rank", "alpha", "seed"] as const;

const KINDS = [
  { value: "LORA", label: "LoRA" },
  { value: "FULL", label: "Full" },
] as const;

const TARGETS = [
  { name: "trainAttn", label: "Attention", defaultChecked: true },
  { name: "trainMlp", label: "MLP", defaultChecked: true },
  { name: "trainUnembed", label: "Unembedding", defaultChecked: false },
];

export function CreateAdapterForm() {
  const trpc = useTRPC();
  const models = useQuery(trpc.models.list.queryOptions({}));
  const [kind, setKind] = useState<"LORA" | "FULL">("LORA");
  const { errors, created, submit, pending } = useCreateForm({
    mutation: useMutation(trpc.adapters.create.mutationOptions()),
    parse: (values) => parseWith(ZAdapterForm, values),
    fields: FIELDS,
    byCode: { CONFLICT: { field: "name", message: "An adapter with this name already exists" } },
    refresh: trpc.adapters.list.queryKey(),
    onCreated: () => setKind("LORA"),
  });

  const noModels = models.isSuccess && models.data.length === 0;
  return (
    <form onSubmit={submit} noValidate className="space-y-4">
      {models.error ? (
        <Field label="Base model" name="baseModel" error={errors.baseModel}>
          <ErrorState error={models.error} />
        </Field>
      ) : (
        <SelectField
          label="Base model"
          name="baseModel"
          errors={errors}
          disabled={!models.isSuccess || noModels}
          choices={models.data?.map((m) => ({ value: m.name, label: `${m.name} (${m.architecture})` }))}
        >
          {!models.isSuccess && <option value="">Loading models…</option>}
          {noModels && <option value="">No base models installed</option>}
        </SelectField>
      )}
      <TextField
        label="Name"
        name="name"
        errors={errors}
        autoComplete="off"
        hint="Letters, digits, '.', '_' and '-'"
      />
      <RadioGroup legend="Type" name="kind" choices={KINDS} value={kind} onChange={setKind}>
        {kind === "FULL" && (
          <p className="mt-1 text-xs text-gray-500">Trains every weight of the base model.</p>
        )}
      </RadioGroup>
      {kind === "LORA" && (
        <>
          <div className="grid gap-4 sm:grid-cols-2">
            <TextField
              label="Rank"
              name="rank"
              errors={errors}
              numeric="numeric"
              defaultValue="8"
              hint="1 to 1024"
            />
            <TextField
              label="Alpha"
              name="alpha"
              errors={errors}
              numeric="decimal"
              defaultValue="32"
              hint="The update is scaled by alpha / r"
            />
          </div>
          <fieldset aria-describedby={errors.targets ? "targets-error" : undefined}>
            <legend className="text-sm font-medium">Target modules</legend>
            <div className="mt-1 flex flex-wrap gap-4 text-sm">
              {TARGETS.map((t) => (
                <label key={t.name} className="flex items-center gap-2">
                  <input type="checkbox" name={t.name} defaultChecked={t.defaultChecked} />
                  {t.label}
                </label>
              ))}
            </div>
            {errors.targets && (
              <p role="alert" id="targets-error" className="mt-1 text-xs text-red-700">
                {errors.targets}
              </p>
            )}
          </fieldset>
        </>
      )}
      <TextField label="Seed" name="seed" errors={errors} numeric="numeric" defaultValue="0" />
      <FormError errors={errors} />
      {created && (
        <CreatedNotice>
          Created adapter{" "}
          <Link href={`/adapters/${created.id}`} className="font-medium underline">
            {created.name}
          </Link>
          .
        </CreatedNotice>
      )}
      <SubmitButton label="Create adapter" pending={pending} disabled={!models.isSuccess || noModels} />
    </form>
  );
}
