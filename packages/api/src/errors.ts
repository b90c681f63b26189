// What a client is told about a failed procedure, the same over tRPC and REST:
// schema failures name the field, internal failures say only "internal error"
// (the cause is logged, never sent).

import type { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";

interface Issue {
  path: PropertyKey[];
  message: string;
  code?: string;
}

/** The issues of a schema failure (zod's, as tRPC wraps them), or null. */
export function schemaIssues(error: TRPCError): Issue[] | null {
  const cause = error.cause as { issues?: unknown } | undefined;
  if (error.code !== "BAD_REQUEST" || !Array.isArray(cause?.issues)) return null;
  return cause.issues as Issue[];
}

const fieldOf = (issue: Issue) =>
  issue.path.length ? issue.path.map((p) => (typeof p === "symbol" ? p.description : p)).join(".") : "input";

export function publicMessage(error: TRPCError): string {
  if (error.code === "INTERNAL_SERVER_ERROR") return "internal error";
  const issue = schemaIssues(error)?.[0];
  return issue ? `${fieldOf(issue)}: ${issue.message}` : error.message;
}

/** The REST answer for an error: its status and a JSON body `{ message, code, issues? }`. */
export function restError(error: TRPCError): { status: number; body: object } {
  const issues = schemaIssues(error);
  return {
    status: getHTTPStatusCodeFromError(error),
    body: {
      message: publicMessage(error),
      code: error.code,
      ...(issues ? { issues: issues.map((i) => ({ path: i.path, message: i.message, code: i.code })) } : {}),
    },
  };
}
