// What the dashboard needs to know about the API's answers: the router's output
// types and the errors a call can fail with, in words for a person.

import type { AppRouter } from "@opentinker/api";
import { isTRPCClientError } from "@trpc/client";
import type { inferRouterOutputs } from "@trpc/server";

export type Outputs = inferRouterOutputs<AppRouter>;

/** The tRPC code of a failed call (NOT_FOUND, CONFLICT, TOO_MANY_REQUESTS, …), or null. */
export function errorCode(error: unknown): string | null {
  return isTRPCClientError<AppRouter>(error) ? (error.data?.code ?? null) : null;
}

/** A failed call's message; zod's JSON list of issues becomes "field: reason; …". */
export function errorMessage(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  if (!message.startsWith("[")) return message;
  try {
    const issues = JSON.parse(message) as { path?: (string | number)[]; message: string }[];
    return issues.map((i) => (i.path?.length ? `${i.path.join(".")}: ${i.message}` : i.message)).join("; ");
  } catch {
    return message;
  }
}
