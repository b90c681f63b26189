// What every Tinker call works with: the caller's context and API procedures,
// the model-name aliases, the service's secret (for JWTs and signed links) and
// the origin links are made against; and what a call answers.
import type { Caller, Context, createCaller } from "@opentinker/api";
import type { z } from "zod";
import { TinkerError } from "./convert.ts";
import type { TinkerModelAliases } from "./model-names.ts";

export interface Scope {
  ctx: Context & { caller: Caller };
  api: ReturnType<typeof createCaller>;
  aliases: TinkerModelAliases;
  /** The web process's secret (OPENTINKER_SESSION_SECRET); keys for JWTs and signed links derive from it. */
  secret: string;
  /** Where this service is reached, as the caller reached it (for links it hands out). */
  origin: string;
}

export type Reply =
  | { json: unknown }
  | { protobuf: Uint8Array }
  | { empty: true }
  | { file: { contentType: string; filename: string; body: NodeJS.ReadableStream | Buffer } };

/** The body checked against a Tinker schema; a 400 names the first wrong field. */
export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new TinkerError(400, `${issue?.path.join(".") || "body"}: ${issue?.message}`);
}
