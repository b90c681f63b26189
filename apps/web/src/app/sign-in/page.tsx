"use client";

import { useRouter } from "next/navigation";
import { type FormEvent, useState } from "react";
import { TextField } from "../../components/shared/fields.tsx";
import { authRequest, useResetAfterSessionChange } from "../../lib/session.ts";

/** Larger than the dashboard's fields: the page holds nothing else. */
const INPUT = "mt-1 w-full rounded border border-gray-300 px-3 py-2";

export default function SignInPage() {
  const router = useRouter();
  const reset = useResetAfterSessionChange();
  const [error, setError] = useState<string | null>(null);
  const [pending, setPending] = useState(false);

  async function submit(event: FormEvent<HTMLFormElement>) {
    event.preventDefault();
    const form = new FormData(event.currentTarget);
    setPending(true);
    setError(null);
    try {
      const result = await authRequest<{ message?: string }>("sign-in", {
        email: String(form.get("email") ?? ""),
        password: String(form.get("password") ?? ""),
      });
      if (!result.ok) return setError(result.data.message ?? "sign-in failed");
      await reset();
      router.push("/");
    } catch {
      setError("the service did not answer; try again");
    } finally {
      setPending(false);
    }
  }

  return (
    <main className="mx-auto mt-24 max-w-sm px-4">
      <h1 className="mb-6 text-2xl font-semibold">Sign in to OpenTinker</h1>
      <form onSubmit={submit} className="space-y-4 rounded-lg border border-gray-200 bg-white p-6 shadow-sm">
        <TextField
          label="Email"
          name="email"
          type="email"
          required
          autoComplete="username"
          className={INPUT}
        />
        <TextField
          label="Password"
          name="password"
          type="password"
          required
          autoComplete="current-password"
          className={INPUT}
        />
        {error && (
          <p role="alert" className="text-sm text-red-700">
            {error}
          </p>
        )}
        <button
          type="submit"
          disabled={pending}
          className="w-full rounded bg-blue-600 px-4 py-2 font-medium text-white hover:bg-blue-700 disabled:opacity-60"
        >
          {pending ? "Signing in…" : "Sign in"}
        </button>
      </form>
    </main>
  );
}
