// The bodies and query strings of the Tinker protocol's weights, runs, sessions
// and account calls (snake_case, as the SDK sends them). Query values arrive as
// strings; the numbers among them are read as whole decimal numbers only.
import { MAX_TTL_SECONDS } from "@opentinker/protocol";
import { z } from "zod";

const ZModelId = z.string().min(1).max(64);
const ZSeqId = z.number().int().positive().nullish();
// A name becomes part of a path and of our object names: the same characters as our checkpoint names.
const ZWeightsName = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    "letters, digits, '.', '_' and '-', starting with a letter or digit",
  );

export const ZSaveWeightsBody = z.object({
  model_id: ZModelId,
  seq_id: ZSeqId,
  path: ZWeightsName.nullish(),
  ttl_seconds: z.number().int().positive().max(MAX_TTL_SECONDS).nullish(),
  overwrite: z.boolean().default(false),
});

export const ZLoadWeightsBody = z.object({
  model_id: ZModelId.nullish(),
  seq_id: ZSeqId,
  session_id: z.string().nullish(),
  path: z.string().min(1),
  optimizer: z.boolean(),
  weights_access_token: z.string().nullish(),
});

export const ZSaveWeightsForSamplerBody = z.object({
  model_id: ZModelId,
  seq_id: ZSeqId,
  path: ZWeightsName.nullish(),
  sampling_session_seq_id: z.number().int().nullish(),
  ttl_seconds: z.number().int().positive().max(MAX_TTL_SECONDS).nullish(),
});

export const ZTinkerPathBody = z.object({ tinker_path: z.string().min(1) });

export const ZTtlBody = z.object({
  ttl_seconds: z.number().int().positive().max(MAX_TTL_SECONDS).nullable(),
});

export const ZProjectBody = z.object({ project_id: z.string().min(1).max(128) });

const queryInt = (name: string, min: number, max: number) =>
  z
    .string()
    .regex(/^[0-9]{1,9}$/, `${name} must be a whole number`)
    .transform(Number)
    .pipe(z.number().min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`));

const ZAccessScope = z.enum(["owned", "accessible"]).default("owned");

/** limit/offset paging; `defaultLimit` is the SDK's own default for the call. */
export const pageQuery = (defaultLimit: number) =>
  z.object({
    limit: queryInt("limit", 1, 1000).default(defaultLimit),
    offset: queryInt("offset", 0, 1_000_000_000).default(0),
    access_scope: ZAccessScope,
  });

export const ZAccessQuery = z.object({ access_scope: ZAccessScope });

export const ZAuditQuery = z.object({
  event_type: z.enum(["all", "checkpoints"]).default("all"),
  day: z.iso.date("day must be a date, YYYY-MM-DD").optional(),
});

const hourAligned = (name: string) =>
  z.iso
    .datetime({ offset: true, message: `${name} must be an RFC 3339 date-time` })
    .transform((s) => new Date(s))
    .refine((d) => d.getTime() % 3_600_000 === 0, `${name} must be on a UTC hour boundary`);

export const ZUsageQuery = z.object({
  starting_on: hourAligned("starting_on"),
  ending_before: hourAligned("ending_before"),
});
