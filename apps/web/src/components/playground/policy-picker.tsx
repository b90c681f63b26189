"use client";
// What the playground samples from: a base model as it is, or one of the
// team's adapters at one of its published versions (the latest unless another
// is chosen). The choice is a policy reference, exactly as the API takes it.
import type { PolicyRef } from "@opentinker/protocol";
import { useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { useTRPC } from "../../lib/trpc.ts";
import { errorMessage } from "../shared/api.ts";
import { type FieldErrorMap, SelectField } from "../shared/fields.tsx";

const BASE = "base:";
const ADAPTER = "adapter:";

/** The picker's state, and the policy it stands for (null while an adapter has no version to sample). */
export function usePolicyChoice() {
  const trpc = useTRPC();
  const [source, setSource] = useState("");
  const [version, setVersion] = useState("");
  const adapterId = source.startsWith(ADAPTER) ? source.slice(ADAPTER.length) : null;
  const versions = useQuery({
    ...trpc.adapters.versions.queryOptions({ adapterId: adapterId ?? "" }),
    enabled: adapterId !== null,
    select: (list) => [...list].sort((a, b) => b.version - a.version),
  });
  const chosen = adapterId
    ? (versions.data?.find((v) => String(v.version) === version) ?? versions.data?.[0])
    : undefined;
  const policy: PolicyRef | null = source.startsWith(BASE)
    ? { baseModel: source.slice(BASE.length) }
    : chosen
      ? { handle: chosen.handle }
      : null;
  const choose = (next: string) => {
    setSource(next);
    setVersion("");
  };
  return {
    source,
    choose,
    version: chosen ? String(chosen.version) : "",
    setVersion,
    adapterId,
    versions,
    policy,
  };
}

export type PolicyChoice = ReturnType<typeof usePolicyChoice>;

export function PolicyPicker({ choice, errors }: { choice: PolicyChoice; errors: FieldErrorMap }) {
  const trpc = useTRPC();
  const models = useQuery(trpc.models.list.queryOptions({}));
  const adapters = useQuery(trpc.adapters.list.queryOptions({}));
  const problem = models.error ?? adapters.error;
  const { versions } = choice;
  return (
    <div className="grid gap-4 sm:grid-cols-2">
      <SelectField
        label="Model"
        name="policy"
        errors={errors}
        problem={problem ? errorMessage(problem) : undefined}
        value={choice.source}
        onChange={(e) => choice.choose(e.target.value)}
      >
        <option value="">Choose a model or adapter…</option>
        <optgroup label="Base models">
          {(models.data ?? []).map((m) => (
            <option key={m.id} value={`${BASE}${m.name}`}>
              {m.name}
            </option>
          ))}
        </optgroup>
        <optgroup label="Adapters">
          {(adapters.data ?? []).map((a) => (
            <option key={a.id} value={`${ADAPTER}${a.id}`}>
              {a.name} ({a.baseModel})
            </option>
          ))}
        </optgroup>
      </SelectField>
      {choice.adapterId && (
        <SelectField
          label="Version"
          name="version"
          errors={errors}
          problem={
            versions.error
              ? errorMessage(versions.error)
              : versions.data?.length === 0
                ? "This adapter has no published version yet: train it (or save weights for the sampler) first."
                : undefined
          }
          value={choice.version}
          disabled={!versions.data?.length}
          onChange={(e) => choice.setVersion(e.target.value)}
        >
          {versions.isPending && <option value="">Loading versions…</option>}
          {(versions.data ?? []).map((v, i) => (
            <option key={v.version} value={String(v.version)}>
              {`v${v.version} · step ${v.trainerStep}${i === 0 ? " (latest)" : ""}`}
            </option>
          ))}
        </SelectField>
      )}
    </div>
  );
}
