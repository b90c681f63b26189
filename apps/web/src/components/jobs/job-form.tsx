"use client";
// Creating a job: the kind, its adapter and environment, and the config of that
// kind. Checked with the protocol's schemas before anything is sent; after a
// first attempt the errors follow the typing.
import { useMutation, useQuery, useQueryClient } from "@tanstack/react-query";
import Link from "next/link";
import { useRouter } from "next/navigation";
import { type FormEvent, type ReactNode, useState } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { Button, ErrorState, Field, INPUT } from "../ui.tsx";
import {
  type FieldErrors,
  type FieldName,
  INITIAL_VALUES,
  type JobFormValues,
  type JobKind,
  needsEnvironment,
  validateJobForm,
} from "./job-form-model.ts";

// Option texts are part of the Kind label's text, so they avoid the other fields' names.
const KINDS: { value: JobKind; label: string }[] = [
  { value: "RL", label: "RL (reinforcement learning)" },
  { value: "SFT", label: "SFT (supervised fine-tuning)" },
  { value: "EVAL", label: "EVAL (evaluation)" },
];

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

  function set<K extends FieldName>(field: K, value: JobFormValues[K]) {
    const next = { ...values, [field]: value };
    setValues(next);
    if (attempted) {
      const verdict = validateJobForm(next);
      setErrors(verdict.ok ? {} : verdict.errors);
    }
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
        await queryClient.invalidateQueries({ queryKey: trpc.jobs.list.queryKey() });
        router.push(`/jobs/${job.id}`);
      },
    });
  }

  /** Props every input shares: id for its label, and its error wired for screen readers. */
  const control = (name: FieldName) => ({
    id: name,
    name,
    "aria-invalid": errors[name] ? true : undefined,
    "aria-describedby": errors[name] ? `${name}-error` : undefined,
    className: `${INPUT} aria-invalid:border-red-500`,
  });

  const text = (name: FieldName, label: string, options: { hint?: string; decimal?: boolean } = {}) => (
    <Field label={label} name={name} error={errors[name]} {...(options.hint ? { hint: options.hint } : {})}>
      <input
        {...control(name)}
        type="text"
        inputMode={options.decimal ? "decimal" : "numeric"}
        autoComplete="off"
        value={String(values[name])}
        onChange={(e) => set(name, e.target.value)}
      />
    </Field>
  );

  const { kind } = values;
  return (
    <form onSubmit={submit} noValidate className="space-y-6">
      <Section title="What to run">
        <Field label="Kind" name="kind" error={errors.kind}>
          <select {...control("kind")} value={kind} onChange={(e) => set("kind", e.target.value as JobKind)}>
            {KINDS.map((k) => (
              <option key={k.value} value={k.value}>
                {k.label}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Adapter" name="adapterId" error={errors.adapterId ?? listProblem(adapters, "adapters")}>
          <select
            {...control("adapterId")}
            value={values.adapterId}
            onChange={(e) => set("adapterId", e.target.value)}
            disabled={!adapters.data?.length}
          >
            <option value="">{adapters.isPending ? "Loading adapters…" : "Choose an adapter"}</option>
            {adapters.data?.map((a) => (
              <option key={a.id} value={a.id}>
                {a.name} ({a.baseModel})
              </option>
            ))}
          </select>
        </Field>
        {adapters.data?.length === 0 && (
          <NoneYet href="/adapters" what="adapter">
            A job trains or evaluates an adapter.
          </NoneYet>
        )}
        {needsEnvironment(kind) && (
          <>
            <Field
              label="Environment"
              name="environmentId"
              error={errors.environmentId ?? listProblem(environments, "environments")}
            >
              <select
                {...control("environmentId")}
                value={values.environmentId}
                onChange={(e) => set("environmentId", e.target.value)}
                disabled={!environments.data?.length}
              >
                <option value="">
                  {environments.isPending ? "Loading environments…" : "Choose an environment"}
                </option>
                {environments.data?.map((env) => (
                  <option key={env.id} value={env.id}>
                    {env.name} ({env.kind === "BUILTIN" ? env.builtin : env.url})
                  </option>
                ))}
              </select>
            </Field>
            {environments.data?.length === 0 && (
              <NoneYet href="/environments" what="environment">
                RL and EVAL jobs roll out episodes in one.
              </NoneYet>
            )}
          </>
        )}
      </Section>

      {kind === "RL" && (
        <Section title="Training">
          {text("steps", "Steps", { hint: "Required: how many optimizer updates to make." })}
          {text("groupsPerStep", "Groups per step", { hint: "Prompts sampled for each update." })}
          {text("groupSize", "Group size", { hint: "Samples per prompt; advantages compare them." })}
          <Field label="Loss" name="lossFn" error={errors.lossFn}>
            <select
              {...control("lossFn")}
              value={values.lossFn}
              onChange={(e) => set("lossFn", e.target.value as JobFormValues["lossFn"])}
            >
              <option value="ppo">ppo (clipped)</option>
              <option value="importance_sampling">importance_sampling</option>
            </select>
          </Field>
          {text("learningRate", "Learning rate", { decimal: true })}
          {text("temperature", "Temperature", { decimal: true, hint: "Blank: the sampler's default." })}
          {text("seed", "Seed")}
          {text("checkpointEvery", "Checkpoint every", {
            hint: "Save a resumable checkpoint every N updates.",
          })}
          {text("validationEvery", "Validation every", { hint: "Optional; set both validation fields." })}
          {text("validationGroups", "Validation groups", { hint: "Optional; prompts per validation run." })}
          {retention()}
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
                {...control("conversations")}
                className={`${INPUT} font-mono aria-invalid:border-red-500`}
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
          {retention()}
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
        <Button type="submit" disabled={create.isPending}>
          {create.isPending ? "Creating…" : "Create job"}
        </Button>
        <Link href="/jobs" className="text-sm text-gray-700 underline">
          Back to jobs
        </Link>
        {attempted && Object.keys(errors).length > 0 && (
          <p className="text-sm text-red-700">Fix the fields marked above; nothing was sent.</p>
        )}
      </div>
    </form>
  );

  function retention() {
    return (
      <Field label="Retention" name="retention" error={errors.retention}>
        <select
          {...control("retention")}
          value={values.retention}
          onChange={(e) => set("retention", e.target.value as JobFormValues["retention"])}
        >
          <option value="keep-final">keep-final (delete intermediate snapshots)</option>
          <option value="keep-all">keep-all</option>
        </select>
      </Field>
    );
  }
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
