// JSON file helpers: reading JSON, and turning zod issues into one-line messages
// that name the file and the key (shared with the engine's model I/O).
import { readFile } from "node:fs/promises";
import type { z } from "zod";

/** True when an error from node:fs means "no such file". */
export function isNotFound(error: unknown): boolean {
  return error instanceof Error && "code" in error && error.code === "ENOENT";
}

/** Reads and parses a JSON file; a missing file or bad JSON is an error naming the path. */
export async function readJsonFile(path: string, what: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (error) {
    if (isNotFound(error)) throw new Error(`${path}: not found (expected ${what})`);
    throw error;
  }
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${path}: not valid JSON (${reason})`);
  }
}

/** `architectures[0]`, `rope_scaling.rope_type`: the key as a user would write it. */
export function formatKeyPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const segment of path) {
    if (typeof segment === "number") out += `[${segment}]`;
    else out += out === "" ? String(segment) : `.${String(segment)}`;
  }
  return out === "" ? "(root)" : out;
}

/** A value as it appears in a message, cut short so a huge array cannot flood a log. */
export function describeValue(value: unknown): string {
  const text = JSON.stringify(value) ?? String(value);
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}

// A missing key reads "is missing" rather than "expected number, received undefined".
const errorMap: z.core.$ZodErrorMap = (issue) =>
  issue.input === undefined && issue.code === "invalid_type" ? "is missing" : undefined;

function describeIssue(issue: z.core.$ZodIssue): string {
  const key = formatKeyPath(issue.path);
  const shown =
    issue.input === undefined || issue.code === "custom" ? "" : ` (got ${describeValue(issue.input)})`;
  return `${key}: ${issue.message}${shown}`;
}

/** Parses with a zod schema; failure is one Error naming the source and every bad key. */
export function parseWithSchema<T extends z.ZodType>(schema: T, data: unknown, source: string): z.output<T> {
  const result = schema.safeParse(data, { error: errorMap, reportInput: true });
  if (result.success) return result.data;
  throw new Error(`${source}: ${result.error.issues.map(describeIssue).join("; ")}`);
}
