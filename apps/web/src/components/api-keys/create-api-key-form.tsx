"use client";
// Creates an API key and shows its plaintext once, with a copy button: the
// server keeps only a hash.
import { useMutation } from "@tanstack/react-query";
import { useRef, useState } from "react";
import { z } from "zod";
import { useTRPC } from "../../lib/trpc.ts";
import type { Outputs } from "../shared/api.ts";
import { FormError, SubmitButton, TextField } from "../shared/fields.tsx";
import { parseWith } from "../shared/forms.ts";
import { useCreateForm } from "../shared/use-create-form.ts";
import { Button } from "../ui.tsx";

const ZKeyForm = z.object({ name: z.string().trim().min(1, "Required").max(128, "At most 128 characters") });

export function CreateApiKeyForm() {
  const trpc = useTRPC();
  const { errors, created, setCreated, submit, pending } = useCreateForm({
    mutation: useMutation(trpc.apiKeys.create.mutationOptions()),
    parse: (values) => parseWith(ZKeyForm, values),
    fields: ["name"],
    refresh: trpc.apiKeys.list.queryKey(),
    keepCreatedWhileInvalid: true,
  });

  return (
    <div className="space-y-4">
      <form onSubmit={submit} noValidate className="space-y-4">
        <TextField
          label="Name"
          name="name"
          errors={errors}
          autoComplete="off"
          hint="Where the key is used, e.g. ci or laptop"
        />
        <FormError errors={errors} />
        <SubmitButton label="Create key" pending={pending} />
      </form>
      {created && <NewKey created={created} onDone={() => setCreated(null)} />}
    </div>
  );
}

function NewKey({ created, onDone }: { created: Outputs["apiKeys"]["create"]; onDone: () => void }) {
  const input = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<"yes" | "failed" | null>(null);

  async function copy() {
    try {
      await navigator.clipboard.writeText(created.key);
      setCopied("yes");
    } catch {
      // No clipboard access (an insecure origin, a denied permission): leave the key selected.
      input.current?.select();
      setCopied("failed");
    }
  }

  return (
    <section
      aria-labelledby="new-key-title"
      className="space-y-2 rounded border border-amber-300 bg-amber-50 p-3 text-sm"
    >
      <h3 id="new-key-title" className="font-medium">
        Key “{created.name}” created
      </h3>
      <p>Copy it now: it won't be shown again.</p>
      <label htmlFor="new-api-key" className="sr-only">
        New API key
      </label>
      <div className="flex gap-2">
        <input
          ref={input}
          id="new-api-key"
          readOnly
          value={created.key}
          onFocus={(e) => e.currentTarget.select()}
          className="w-full min-w-0 rounded border border-gray-300 bg-white px-3 py-2 font-mono text-xs"
        />
        <Button variant="secondary" onClick={() => void copy()}>
          Copy
        </Button>
      </div>
      <p role="status" className="text-xs text-gray-600">
        {copied === "yes"
          ? "Copied to the clipboard."
          : copied === "failed"
            ? "Copy failed: the key is selected, copy it by hand."
            : ""}
      </p>
      <Button variant="secondary" onClick={onDone}>
        Done
      </Button>
    </section>
  );
}
