"use client";
import { defaultJobName, rlPresetOf } from "@opentinker/protocol";
// Creating a job: the kind, its adapter and environment, and the config of that
// kind. Checked with the protocol's schemas before anything is sent; after a
// first attempt the errors follow the typing.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, type ReactNode, useState } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { type Choice, Field, INPUT, SelectField, SubmitButton, TextField } from "../shared/fields.tsx";
import { ErrorState } from "../ui.tsx";
import {
  type FieldErrors,
  type FieldName,
  INITIAL_VALUES,
  type JobFormValues,
  type JobKind,
  needsEnvironment,
  validateJobForm,
  withEnvironmentPreset,
} from "./job-form-model.ts";

// Option texts are part of the Kind label's text, so they avoid the other fields' names.
const KINDS: { value: JobKind; label: string }[] = [
  { value: "RL", label: "RL (reinforcement learning)" },
  { value: "SFT", label: "SFT (supervised fine-tuning)" },
  { value: "EVAL", label: "EVAL (evaluation)" },
];

const LOSSES: Choice[] = [
  { value: "ppo", label: "ppo (clipped)" },
  { value: "importance_sampling", label: "importance_sampling" },
];

const LR_SCHEDULES: Choice[] = [
  { value: "constant", label: "constant" },
  { value: "linear", label: "linear decay to 0" },
  { value: "cosine", label: "cosine decay to 0" },
];

const CLIP_HINT = {
  decimal: true,
  hint: "Scale each update's gradient down to at most this global norm; 0: no clipping.",
};

const RETENTIONS: Choice[] = [
  { value: "keep-final", label: "keep-final (delete intermediate snapshots)" },
  { value: "keep-all", label: "keep-all" },
];

/** Invalid fields get a red border: this form marks errors as you type, after a first attempt. */
const CONTROL = `${INPUT} aria-invalid:border-red-500`;

export function JobForm() {
  const trpc = useTRPC();
  const router = useRouter();
  const queryClient = useQueryClient();
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  const environments = useQuery(trpc.environments.list.queryOptions({}));
  const create = useMutation(trpc.jobs.create.mutationOptions());
  const [values, setValues] = useState<JobFormValues>(INITIAL_VALUES);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [attempted, setAttempted] = useState(false);

  function update(next: JobFormValues) {
    setValues(next);
    if (attempted) {
      const verdict = validateJobForm(next);
      setErrors(verdict.ok ? {} : verdict.errors);
    }
  }

  function set<K extends FieldName>(field: K, value: JobFormValues[K]) {
    update({ ...values, [field]: value });
  }

  const builtinOf = (environmentId: string) =>
    environments.data?.find((env) => env.id === environmentId)?.builtin ?? null;

  /** Choosing a built-in environment fills the RL fields with its preset (they stay editable). */
  function chooseEnvironment(environmentId: string) {
    update(withEnvironmentPreset({ ...values, environmentId }, builtinOf(environmentId)));
  }

  function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    if (create.isPending) return;
    setAttempted(true);
    const verdict = validateJobForm(values);
    if (!verdict.ok) {
      setErrors(verdict.errors);
      // Take the keyboard to the first field that needs attention (once it is marked).
      const form = event.currentTarget;
      requestAnimationFrame(() => form.querySelector<HTMLElement>("[aria-invalid='true']")?.focus());
      return;
    }
    setErrors({});
    create.mutate(verdict.request, {
      onSuccess: async (job) => {
        // Every list of jobs (the overview's, the jobs list's pages).
        await queryClient.invalidateQueries({ queryKey: trpc.jobs.pathKey() });
        router.push(`/jobs/${job.id}`);
      },
    });
  }

  const text = (
    name: FieldName,
    label: string,
    options: { hint?: string; decimal?: boolean; words?: boolean } = {},
  ) => (
    <TextField
      label={label}
      name={name}
      errors={errors}
      hint={options.hint}
      numeric={options.words ? undefined : options.decimal ? "decimal" : "numeric"}
      autoComplete="off"
      className={CONTROL}
      value={String(values[name])}
      onChange={(e) => set(name, e.target.value)}
    />
  );

  /** A select of fixed choices (the kind, the loss, the schedule, the retention policy). */
  const choose = <K extends "kind" | "lossFn" | "lrSchedule" | "retention">(
    name: K,
    label: string,
    choices: readonly Choice[],
  ) => (
    <SelectField
      label={label}
      name={name}
      errors={errors}
      className={CONTROL}
      choices={choices}
      value={values[name]}
      onChange={(e) => set(name, e.target.value as JobFormValues[K])}
    />
  );

  /**
   * A select of the team's adapters or environments: a placeholder while they
   * load, their load error in place of the field's, disabled while there are none.
   */
  const pick = (
    name: "adapterId" | "environmentId",
    label: string,
    list: { isPending: boolean; error: { message: string } | null },
    choices: Choice[] | undefined,
  ) => {
    const what = name === "adapterId" ? "adapter" : "environment";
    return (
      <SelectField
        label={label}
        name={name}
        errors={errors}
        problem={listProblem(list, `${what}s`)}
        className={CONTROL}
        choices={choices}
        value={values[name]}
        onChange={(e) =>
          name === "environmentId" ? chooseEnvironment(e.target.value) : set(name, e.target.value)
        }
        disabled={!choices?.length}
      >
        <option value="">{list.isPending ? `Loading ${what}s…` : `Choose an ${what}`}</option>
      </SelectField>
    );
  };

  const { kind } = values;
  const adapterName = adapters.data?.find((a) => a.id === values.adapterId)?.name;
  const environmentName = needsEnvironment(kind)
    ? (environments.data?.find((env) => env.id === values.environmentId)?.name ?? null)
    : null;
  // What the server will call the job if the name is left blank.
  const defaultName = adapterName ? defaultJobName({ kind, environmentName, adapterName }) : undefined;
  const preset =
    values.environmentId && rlPresetOf(builtinOf(values.environmentId))
      ? builtinOf(values.environmentId)
      : null;
  return (
    <form onSubmit={submit} noValidate className="space-y-6">
      <Section title="What to run">
        {choose("kind", "Kind", KINDS)}
        {pick(
          "adapterId",
          "Adapter",
          adapters,
          adapters.data?.map((a) => ({ value: a.id, label: `${a.name} (${a.baseModel})` })),
        )}
        {adapters.data?.length === 0 && (
          <NoneYet href="/adapters" what="adapter">
            A job trains or evaluates an adapter.
          </NoneYet>
        )}
        {needsEnvironment(kind) && (
          <>
            {pick(
              "environmentId",
              "Environment",
              environments,
              environments.data?.map((env) => ({
                value: env.id,
                label: `${env.name} (${env.kind === "BUILTIN" ? env.builtin : env.url})`,
              })),
            )}
            {environments.data?.length === 0 && (
              <NoneYet href="/environments" what="environment">
                RL and EVAL jobs roll out episodes in one.
              </NoneYet>
            )}
          </>
        )}
        <TextField
          label="Name"
          name="name"
          errors={errors}
          // Part of the field's accessible name, so it names no other field; the default is the placeholder.
          hint="Optional. Blank: named after what the job runs."
          autoComplete="off"
          maxLength={128}
          className={CONTROL}
          placeholder={defaultName}
          value={values.name}
          onChange={(e) => set("name", e.target.value)}
        />
      </Section>

      {kind === "RL" && (
        <Section title="Training">
          {preset && (
            <p data-testid="preset-note" className="text-sm text-gray-600 sm:col-span-2">
              Filled in from the {preset} preset: the settings docs/results.md shows learning. Edit any of
              them.
            </p>
          )}
          {text("steps", "Steps", { hint: "Required: how many optimizer updates to make." })}
          {text("groupsPerStep", "Groups per step", { hint: "Prompts sampled for each update." })}
          {text("groupSize", "Group size", { hint: "Samples per prompt; advantages compare them." })}
          {choose("lossFn", "Loss", LOSSES)}
          {text("learningRate", "Learning rate", { decimal: true })}
          {choose("lrSchedule", "Learning-rate schedule", LR_SCHEDULES)}
          {text("gradClipNorm", "Gradient clip", CLIP_HINT)}
          {text("referenceKl", "KL to the base model", {
            decimal: true,
            hint: "Holds every token's probability near the base model's (or the reference's), at every position; 0: off.",
          })}
          {text("referenceModel", "KL reference", {
            words: true,
            hint: "Optional: a snapshot handle (say, the version an SFT job left) the KL holds the policy near instead of the base model.",
          })}
          {text("temperature", "Temperature", { decimal: true, hint: "Blank: the sampler's default." })}
          {text("seed", "Seed")}
          {text("checkpointEvery", "Checkpoint every", {
            hint: "Save a resumable checkpoint every N updates.",
          })}
          {text("validationEvery", "Validation every", {
            hint: "Optional: also before the first step and after the last; set both validation fields.",
          })}
          {text("validationGroups", "Validation groups", { hint: "Optional; prompts per validation run." })}
          {text("validationGroupSize", "Validation samples per prompt", { hint: "Blank: 1." })}
          {choose("retention", "Retention", RETENTIONS)}
          <Checkbox
            name="dropConstantGroups"
            label="Drop constant groups"
            hint="Skip groups whose rewards are all equal (they carry no signal)."
            checked={values.dropConstantGroups}
            onChange={(checked) => set("dropConstantGroups", checked)}
          />
          <Checkbox
            name="scaleByStd"
            label="Scale advantages by std"
            checked={values.scaleByStd}
            onChange={(checked) => set("scaleByStd", checked)}
          />
        </Section>
      )}

      {kind === "SFT" && (
        <Section title="Training">
          <div className="sm:col-span-2">
            <Field
              label="Conversations (JSON)"
              name="conversations"
              error={errors.conversations}
              hint='An array of { "messages": [{ "role": "system" | "user" | "assistant", "content": "…" }] }.'
            >
              <textarea
                id="conversations"
                name="conversations"
                aria-invalid={errors.conversations ? true : undefined}
                aria-describedby={errors.conversations ? "conversations-error" : undefined}
                className={`${CONTROL} font-mono`}
                rows={12}
                spellCheck={false}
                value={values.conversations}
                onChange={(e) => set("conversations", e.target.value)}
              />
            </Field>
          </div>
          {text("epochs", "Epochs")}
          {text("batchSize", "Batch size")}
          {text("learningRate", "Learning rate", { decimal: true })}
          {text("gradClipNorm", "Gradient clip", CLIP_HINT)}
          {choose("retention", "Retention", RETENTIONS)}
        </Section>
      )}

      {kind === "EVAL" && (
        <Section title="Evaluation">
          {text("evalGroups", "Groups", { hint: "Prompts to evaluate." })}
          {text("evalGroupSize", "Group size", { hint: "Samples per prompt." })}
          {text("seed", "Seed")}
          {text("temperature", "Temperature", { decimal: true, hint: "Blank: the sampler's default." })}
        </Section>
      )}

      {create.error && <ErrorState error={create.error} />}
      <div className="flex flex-wrap items-center gap-3">
        <SubmitButton label="Create job" pending={create.isPending} />
        <Link href="/jobs" className="text-sm text-gray-700 underline">
          Back to jobs
        </Link>
        {attempted && Object.keys(errors).length > 0 && (
          <p className="text-sm text-red-700">Fix the fields marked above; nothing was sent.</p>
        )}
      </div>
    </form>
  );
}

/** Why a list to choose from is unusable, if it is: still loading is not a problem. */
function listProblem(query: { error: { message: string } | null }, what: string): string | undefined {
  return query.error ? `Could not load ${what}: ${query.error.message}` : undefined;
}

function NoneYet({ href, what, children }: { href: string; what: string; children: ReactNode }) {
  return (
    <p className="text-sm text-gray-600 sm:col-span-2">
      No {what} yet. {children}{" "}
      <Link href={href} className="text-blue-700 underline">
        Create an {what}
      </Link>{" "}
      first.
    </p>
  );
}

function Section({ title, children }: { title: string; children: ReactNode }) {
  return (
    <fieldset className="rounded-lg border border-gray-200 bg-white p-4 shadow-sm">
      <legend className="px-1 text-sm font-semibold text-gray-700">{title}</legend>
      <div className="grid gap-4 sm:grid-cols-2">{children}</div>
    </fieldset>
  );
}

function Checkbox({
  name,
  label,
  hint,
  checked,
  onChange,
}: {
  name: string;
  label: string;
  hint?: string;
  checked: boolean;
  onChange: (checked: boolean) => void;
}) {
  return (
    <label htmlFor={name} className="flex items-start gap-2 text-sm">
      <input
        id={name}
        name={name}
        type="checkbox"
        className="mt-0.5 h-4 w-4"
        checked={checked}
        onChange={(e) => onChange(e.target.checked)}
      />
      <span>
        <span className="font-medium">{label}</span>
        {hint && <span className="block text-xs text-gray-500">{hint}</span>}
      </span>
    </label>
  );
}
