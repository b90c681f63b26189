// The object store's settings, zod-validated: which store (OPENTINKER_STORE),
// and for an S3-compatible one the standard AWS variables. Every process that
// reads or writes objects (web, worker) reads these same settings.
import path from "node:path";
import { z } from "zod";

/** Where objects go: a local folder, or an S3-compatible bucket and key prefix. */
export type StoreTarget =
  | { kind: "local"; root: string | null }
  | { kind: "s3"; bucket: string; prefix: string };

// Bucket names as S3 allows them (3-63 characters, lower case, digits, dots, hyphens).
const BUCKET = /^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/;
const PREFIX = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+)*$/;

const STORE_HELP =
  "OPENTINKER_STORE must be s3://bucket/prefix or an absolute folder (unset: the data directory's store folder)";

/** Parses OPENTINKER_STORE; unset or empty is the local folder under the data directory. */
export function parseStoreTarget(value: string | undefined): StoreTarget {
  if (!value) return { kind: "local", root: null };
  if (path.isAbsolute(value)) return { kind: "local", root: value };
  const match = /^s3:\/\/([^/]+)(?:\/(.*))?$/.exec(value);
  if (!match) throw new Error(`${STORE_HELP}, not "${value}"`);
  const bucket = match[1] as string;
  const prefix = (match[2] ?? "").replace(/\/+$/, "");
  if (!BUCKET.test(bucket)) throw new Error(`OPENTINKER_STORE: "${bucket}" is not a valid bucket name`);
  if (prefix && !PREFIX.test(prefix))
    throw new Error(`OPENTINKER_STORE: "${prefix}" is not a valid key prefix (letters, digits, . _ - and /)`);
  return { kind: "s3", bucket, prefix };
}

const optional = z
  .string()
  .optional()
  .transform((value) => value || undefined);

export const ZStoreEnv = z
  .object({
    /** s3://bucket/prefix, or an absolute folder (e.g. a shared volume); unset: <data dir>/store. */
    OPENTINKER_STORE: optional.transform((value, ctx) => {
      try {
        return parseStoreTarget(value);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
    /** A non-AWS S3 endpoint (MinIO, Ceph, R2, ...): requests then use path-style addressing. */
    AWS_ENDPOINT_URL: optional.pipe(z.url("AWS_ENDPOINT_URL must be a URL").optional()),
    AWS_ENDPOINT_URL_S3: optional.pipe(z.url("AWS_ENDPOINT_URL_S3 must be a URL").optional()),
    AWS_REGION: z.string().min(1).default("us-east-1"),
    /** Unset: the SDK's default chain (instance role, web identity, ~/.aws). */
    AWS_ACCESS_KEY_ID: optional,
    AWS_SECRET_ACCESS_KEY: optional,
    AWS_SESSION_TOKEN: optional,
    /** Bytes of downloaded snapshots and checkpoints a worker keeps on local disk (0: none). */
    OPENTINKER_STORE_CACHE_MB: z.coerce.number().int().min(0).default(4096),
    /** Files above this size upload in parts of this size (S3's minimum part is 5 MiB). */
    OPENTINKER_STORE_PART_MB: z.coerce.number().int().min(5).max(5120).default(16),
  })
  .refine((env) => Boolean(env.AWS_ACCESS_KEY_ID) === Boolean(env.AWS_SECRET_ACCESS_KEY), {
    message: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY must be set together",
    path: ["AWS_SECRET_ACCESS_KEY"],
  });

export type StoreEnv = z.infer<typeof ZStoreEnv>;

export function readStoreEnv(source: Record<string, string | undefined> = process.env): StoreEnv {
  const parsed = ZStoreEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`store configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}
