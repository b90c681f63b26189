"use client";
// The sampling settings, as the API takes them; each hint says what the
// API's default is and what the special values mean.
import { type FieldErrorMap, TextField } from "../shared/fields.tsx";
import { DEFAULT_SETTINGS, type SettingName, type SettingsText } from "./playground-model.ts";

const FIELDS: readonly { name: SettingName; label: string; hint: string; numeric: "numeric" | "decimal" }[] =
  [
    { name: "maxTokens", label: "Max tokens", hint: "Tokens to sample per completion.", numeric: "numeric" },
    {
      name: "temperature",
      label: "Temperature",
      hint: `Default ${DEFAULT_SETTINGS.temperature}; 0 = greedy.`,
      numeric: "decimal",
    },
    {
      name: "topK",
      label: "Top-k",
      hint: `Default ${DEFAULT_SETTINGS.topK}; 0 or -1 = off.`,
      numeric: "numeric",
    },
    {
      name: "topP",
      label: "Top-p",
      hint: `Default ${DEFAULT_SETTINGS.topP} (off); above 0.`,
      numeric: "decimal",
    },
    { name: "seed", label: "Seed", hint: "Blank: a fresh draw each time.", numeric: "numeric" },
    {
      name: "numSamples",
      label: "Samples",
      hint: `How many completions (default ${DEFAULT_SETTINGS.numSamples}).`,
      numeric: "numeric",
    },
  ];

export function SettingsFields({
  settings,
  onChange,
  errors,
}: {
  settings: SettingsText;
  onChange: (settings: SettingsText) => void;
  errors: FieldErrorMap;
}) {
  return (
    <div className="grid gap-4 sm:grid-cols-3">
      {FIELDS.map((f) => (
        <TextField
          key={f.name}
          label={f.label}
          name={f.name}
          errors={errors}
          hint={f.hint}
          numeric={f.numeric}
          value={settings[f.name]}
          onChange={(e) => onChange({ ...settings, [f.name]: e.target.value })}
        />
      ))}
    </div>
  );
}
