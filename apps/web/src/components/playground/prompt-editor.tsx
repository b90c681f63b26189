"use client";
// The prompt: raw text as it is, or a chat of messages with roles that the
// service renders with the model's chat template, ending with the assistant's turn.
import { Field, type FieldErrorMap, INPUT, RadioGroup } from "../shared/fields.tsx";
import { Button } from "../ui.tsx";
import type { ChatRole, ChatTurn, PromptMode } from "./playground-model.ts";

const MODES = [
  { value: "text", label: "Raw text" },
  { value: "chat", label: "Chat" },
] as const;

const ROLES: readonly ChatRole[] = ["system", "user", "assistant"];

export function PromptEditor({
  mode,
  onMode,
  text,
  onText,
  messages,
  onMessages,
  errors,
}: {
  mode: PromptMode;
  onMode: (mode: PromptMode) => void;
  text: string;
  onText: (text: string) => void;
  messages: readonly ChatTurn[];
  onMessages: (messages: ChatTurn[]) => void;
  errors: FieldErrorMap;
}) {
  const update = (i: number, change: Partial<ChatTurn>) =>
    onMessages(messages.map((m, k) => (k === i ? { ...m, ...change } : m)));
  return (
    <div className="space-y-3">
      <RadioGroup legend="Input" name="mode" choices={MODES} value={mode} onChange={onMode} />
      {mode === "text" ? (
        <Field
          label="Prompt"
          name="text"
          error={errors.text}
          hint="Tokenized as it is, with the tokenizer's special tokens."
        >
          <textarea
            id="text"
            name="text"
            rows={5}
            aria-invalid={errors.text ? true : undefined}
            aria-describedby={errors.text ? "text-error" : undefined}
            className={`${INPUT} font-mono`}
            value={text}
            onChange={(e) => onText(e.target.value)}
          />
        </Field>
      ) : (
        <fieldset aria-describedby={errors.messages ? "messages-error" : undefined}>
          <legend className="text-sm font-medium">Messages</legend>
          <p className="text-xs text-gray-500">
            Rendered with the chat template of the chosen policy's base model, ending with the assistant's
            turn.
          </p>
          <ol className="mt-1 space-y-2">
            {messages.map((m, i) => (
              // Turns have no identity beyond their place; editing never reorders them.
              // biome-ignore lint/suspicious/noArrayIndexKey: see above
              <li key={i} className="flex flex-wrap items-start gap-2">
                <select
                  aria-label={`Role of message ${i + 1}`}
                  className={`${INPUT} mt-0 w-32`}
                  value={m.role}
                  onChange={(e) => update(i, { role: e.target.value as ChatRole })}
                >
                  {ROLES.map((r) => (
                    <option key={r} value={r}>
                      {r}
                    </option>
                  ))}
                </select>
                <textarea
                  aria-label={`Message ${i + 1}`}
                  rows={2}
                  className={`${INPUT} mt-0 min-w-0 flex-1 font-mono`}
                  value={m.content}
                  onChange={(e) => update(i, { content: e.target.value })}
                />
                <Button
                  variant="secondary"
                  aria-label={`Remove message ${i + 1}`}
                  onClick={() => onMessages(messages.filter((_, k) => k !== i))}
                >
                  Remove
                </Button>
              </li>
            ))}
          </ol>
          <Button
            variant="secondary"
            className="mt-2"
            onClick={() => onMessages([...messages, { role: nextRole(messages), content: "" }])}
          >
            Add message
          </Button>
          {errors.messages && (
            <span role="alert" id="messages-error" className="mt-1 block text-xs text-red-700">
              {errors.messages}
            </span>
          )}
        </fieldset>
      )}
    </div>
  );
}

/** A chat alternates: after the user comes the assistant, and the other way round. */
const nextRole = (messages: readonly ChatTurn[]): ChatRole =>
  messages.at(-1)?.role === "user" ? "assistant" : "user";
