"use client";
// The playground: choose a policy, type a prompt or a chat, set the sampling
// settings and sample through the API's own sampling path (`playground.sample`,
// then `playground.result` while the call is still running). The form is
// checked here first with the protocol's schema, so nothing is sent while a
// field is wrong; what the server refuses lands next to its field or above the form.
import type { PlaygroundSample } from "@opentinker/protocol";
import { type FormEvent, useState } from "react";
import { useTRPCClient } from "../../lib/trpc.ts";
import { FormError } from "../shared/fields.tsx";
import { FORM, type FormErrors, focusFirstError, serverErrors } from "../shared/forms.ts";
import { Page } from "../shared/page.tsx";
import { Button, Card } from "../ui.tsx";
import {
  type ChatTurn,
  INITIAL_SETTINGS,
  type PromptMode,
  type SettingsText,
  validatePlayground,
} from "./playground-model.ts";
import { PolicyPicker, usePolicyChoice } from "./policy-picker.tsx";
import { PromptEditor } from "./prompt-editor.tsx";
import { SampleView } from "./sample-view.tsx";
import { SettingsFields } from "./settings-fields.tsx";

/** Fields a server message may name ("prompt: has 600 positions…" lands on the prompt). */
const SERVER_FIELDS = ["text", "messages", "policy", "maxTokens", "numSamples"] as const;

/** A "prompt: …" message belongs to whichever prompt field is shown. */
const promptField = (mode: PromptMode) => (mode === "text" ? "text" : "messages");

export function Playground() {
  const client = useTRPCClient();
  const choice = usePolicyChoice();
  const [mode, setMode] = useState<PromptMode>("text");
  const [text, setText] = useState("");
  const [messages, setMessages] = useState<ChatTurn[]>([{ role: "user", content: "" }]);
  const [settings, setSettings] = useState<SettingsText>(INITIAL_SETTINGS);
  const [errors, setErrors] = useState<FormErrors>({});
  const [pending, setPending] = useState(false);
  const [sample, setSample] = useState<PlaygroundSample | null>(null);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = event.currentTarget;
    const show = (found: FormErrors) => {
      setErrors(found);
      focusFirstError(form, found);
    };
    const verdict = validatePlayground({ policy: choice.policy, mode, text, messages, settings });
    if (!verdict.ok) return show(verdict.errors);
    setErrors({});
    setPending(true);
    try {
      const first = await client.playground.sample.mutate(verdict.request);
      let outcome = first.outcome;
      // A busy sampler answers "pending" after a while; keep waiting on the same call.
      while (outcome.status === "PENDING")
        outcome = await client.playground.result.mutate({
          requestId: first.requestId,
          policy: verdict.request.policy,
        });
      if (outcome.status === "FAILED") show({ [FORM]: `Sampling failed: ${outcome.error}` });
      setSample({ ...first, outcome });
    } catch (error) {
      const found = serverErrors(error, [...SERVER_FIELDS, "prompt"]);
      const { prompt, ...rest } = found;
      show(prompt ? { ...rest, [promptField(mode)]: prompt } : found);
    } finally {
      setPending(false);
    }
  }

  return (
    <Page
      title="Playground"
      description="Sample from a base model or one of your adapters' versions, the way the API does, and read every token with its logprob."
      className="space-y-4"
    >
      <Card>
        <form noValidate onSubmit={submit} className="space-y-4" aria-label="Sample">
          <FormError errors={errors} />
          <PolicyPicker choice={choice} errors={errors} />
          <PromptEditor
            mode={mode}
            onMode={setMode}
            text={text}
            onText={setText}
            messages={messages}
            onMessages={setMessages}
            errors={errors}
          />
          <SettingsFields settings={settings} onChange={setSettings} errors={errors} />
          <Button type="submit" disabled={pending}>
            {pending ? "Sampling…" : "Sample"}
          </Button>
        </form>
      </Card>
      {sample && <SampleView sample={sample} />}
    </Page>
  );
}
