// Objects in an S3-compatible bucket: an object's files under
// `<prefix>/<key>/`, then its manifest (names, sizes, sha256 of each file and the
// object's checksum), written last. A reader starts from the manifest, so an
// object whose upload did not finish is not found, never read in part. Large
// files go up in parts (multipart upload), every operation is retried, and
// every file read back is checked against the manifest.
import { createHash } from "node:crypto";
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { z } from "zod";
import type { StoreEnv } from "./env.ts";
import {
  ChecksumMismatchError,
  checkObject,
  checksumFiles,
  ObjectNotFoundError,
  type ObjectStore,
  type StoredObject,
  sizeOf,
  verifyChecksum,
} from "./object-store.ts";
import { DEFAULT_RETRY, forEachLimit, type RetryPolicy, withRetries } from "./retry.ts";

/** Written after every file of the object; its name cannot be a file's (those start with a letter or digit). */
export const MANIFEST = ".manifest.json";

const ZManifest = z.object({
  format: z.literal("opentinker-object/1"),
  checksum: z.string(),
  files: z.array(z.object({ name: z.string().min(1), bytes: z.number().int().min(0), sha256: z.string() })),
});
type Manifest = z.infer<typeof ZManifest>;

export interface S3StoreOptions {
  client: S3Client;
  bucket: string;
  /** Key prefix without a trailing slash ("" for the bucket's root). */
  prefix: string;
  /** Files larger than this go up in parts of this size. */
  partBytes: number;
  /** Files moved at once, and parts of one file at once. */
  concurrency?: number;
  retry?: RetryPolicy;
}

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");

function isNotFound(error: unknown): boolean {
  const e = error as { name?: string; $metadata?: { httpStatusCode?: number } } | null;
  return e?.name === "NoSuchKey" || e?.name === "NotFound" || e?.$metadata?.httpStatusCode === 404;
}

/** The S3 client the settings describe: a custom endpoint (not AWS) gets path-style addressing. */
export function createS3Client(env: StoreEnv): S3Client {
  const endpoint = env.AWS_ENDPOINT_URL_S3 ?? env.AWS_ENDPOINT_URL;
  const config: S3ClientConfig = { region: env.AWS_REGION, maxAttempts: 4 };
  if (endpoint) {
    config.endpoint = endpoint;
    config.forcePathStyle = true;
    // Many S3-compatible servers reject the SDK's default streaming checksums;
    // our own sha256 per file is verified on every read.
    config.requestChecksumCalculation = "WHEN_REQUIRED";
    config.responseChecksumValidation = "WHEN_REQUIRED";
  }
  if (env.AWS_ACCESS_KEY_ID && env.AWS_SECRET_ACCESS_KEY)
    config.credentials = {
      accessKeyId: env.AWS_ACCESS_KEY_ID,
      secretAccessKey: env.AWS_SECRET_ACCESS_KEY,
      ...(env.AWS_SESSION_TOKEN ? { sessionToken: env.AWS_SESSION_TOKEN } : {}),
    };
  return new S3Client(config);
}

/** Times an unreadable manifest is read again before it counts as corrupt. */
const MANIFEST_REREADS = 4;

function parseJson(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    return null;
  }
}

export class S3Store implements ObjectStore {
  private readonly client: S3Client;
  readonly bucket: string;
  private readonly prefix: string;
  private readonly partBytes: number;
  private readonly concurrency: number;
  private readonly retry: RetryPolicy;

  constructor(options: S3StoreOptions) {
    this.client = options.client;
    this.bucket = options.bucket;
    this.prefix = options.prefix;
    this.partBytes = options.partBytes;
    this.concurrency = options.concurrency ?? 4;
    this.retry = options.retry ?? DEFAULT_RETRY;
  }

  get location(): string {
    return `s3://${this.bucket}${this.prefix ? `/${this.prefix}` : ""}`;
  }

  async put(key: string, files: ReadonlyMap<string, Uint8Array>): Promise<StoredObject> {
    checkObject(key, files);
    const base = this.prefix ? `${this.prefix}/${key}` : key;
    const objectPath = `s3://${this.bucket}/${base}`;
    if (await this.exists(`${base}/${MANIFEST}`))
      throw new Error(`object store: ${objectPath} already exists and is immutable`);
    const checksum = checksumFiles(files);
    const manifest: Manifest = {
      format: "opentinker-object/1",
      checksum,
      files: [...files]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([name, bytes]) => ({ name, bytes: bytes.byteLength, sha256: sha256(bytes) })),
    };
    try {
      await forEachLimit([...files], this.concurrency, ([name, bytes]) =>
        withRetries(this.retry, () => this.upload(`${base}/${name}`, bytes)),
      );
      // Last: from now on readers find the object, whole.
      const body = new TextEncoder().encode(JSON.stringify(manifest));
      await withRetries(this.retry, () => this.upload(`${base}/${MANIFEST}`, body, "application/json"));
    } catch (error) {
      await this.deleteUnder(base).catch(() => {});
      throw new Error(`object store: storing ${objectPath} failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
    return { path: objectPath, checksum, sizeBytes: sizeOf(files) };
  }

  async get(objectPath: string, expectedChecksum?: string): Promise<Map<string, Uint8Array>> {
    const base = this.keyOf(objectPath);
    const manifest = await this.readManifest(objectPath, base);
    if (expectedChecksum && manifest.checksum !== expectedChecksum)
      throw new ChecksumMismatchError(
        `object store: ${objectPath} is ${manifest.checksum}, not its recorded checksum ${expectedChecksum}`,
      );
    const read = new Map<string, Uint8Array>();
    await forEachLimit(manifest.files, this.concurrency, async (file) => {
      const bytes = await withRetries(this.retry, () => this.download(`${base}/${file.name}`));
      if (bytes.byteLength !== file.bytes || sha256(bytes) !== file.sha256)
        throw new ChecksumMismatchError(
          `object store: ${objectPath}/${file.name} does not match its manifest (sha256 ${file.sha256})`,
        );
      read.set(file.name, bytes);
    });
    const files = new Map([...read].sort(([a], [b]) => (a < b ? -1 : 1)));
    verifyChecksum(objectPath, files, manifest.checksum);
    return files;
  }

  async delete(objectPath: string): Promise<void> {
    const base = this.keyOf(objectPath);
    // The manifest first: the object is gone for readers before any file is.
    await withRetries(this.retry, () => this.deleteKeys([`${base}/${MANIFEST}`]));
    await this.deleteUnder(base);
  }

  /** The object's key (prefix included); a path outside this bucket and prefix is refused. */
  private keyOf(objectPath: string): string {
    const root = `s3://${this.bucket}/${this.prefix ? `${this.prefix}/` : ""}`;
    const key = objectPath.startsWith(root) ? objectPath.slice(root.length) : "";
    if (!key || key.split("/").some((part) => part === "" || part === "." || part === ".."))
      throw new RangeError(`object store: ${objectPath} is outside the store ${this.location}`);
    return objectPath.slice(`s3://${this.bucket}/`.length);
  }

  /**
   * The manifest, written last by `put`. S3 itself never shows a half-written
   * object, but some S3-compatible servers (s3rver) stream a PUT to disk where
   * a concurrent GET can read its first bytes: a manifest that does not parse
   * is read again a few times before it counts as corrupt.
   */
  private async readManifest(objectPath: string, base: string): Promise<Manifest> {
    for (let attempt = 0; ; attempt++) {
      const manifest = ZManifest.safeParse(parseJson(await this.manifestBytes(objectPath, base)));
      if (manifest.success) return manifest.data;
      if (attempt >= MANIFEST_REREADS)
        throw new ChecksumMismatchError(`object store: ${objectPath} has an unreadable manifest`);
      await new Promise((resolve) => setTimeout(resolve, 25 * (attempt + 1)));
    }
  }

  private async manifestBytes(objectPath: string, base: string): Promise<Uint8Array> {
    try {
      return await withRetries(this.retry, () => this.download(`${base}/${MANIFEST}`));
    } catch (error) {
      if (isNotFound(error)) throw new ObjectNotFoundError(`object store: ${objectPath} not found`);
      throw error;
    }
  }

  private async exists(key: string): Promise<boolean> {
    try {
      await withRetries(this.retry, () =>
        this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: key })),
      );
      return true;
    } catch (error) {
      if (isNotFound(error)) return false;
      throw error;
    }
  }

  private async upload(
    key: string,
    bytes: Uint8Array,
    contentType = "application/octet-stream",
  ): Promise<void> {
    if (bytes.byteLength <= this.partBytes) {
      await this.client.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: key,
          Body: bytes,
          ContentLength: bytes.byteLength,
          ContentType: contentType,
        }),
      );
      return;
    }
    const upload = new Upload({
      client: this.client,
      params: { Bucket: this.bucket, Key: key, Body: bytes, ContentType: contentType },
      partSize: this.partBytes,
      queueSize: this.concurrency,
      // A failed upload is aborted, so no parts are left behind to be billed.
      leavePartsOnError: false,
    });
    await upload.done();
  }

  private async download(key: string): Promise<Uint8Array> {
    const response = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: key }));
    if (!response.Body) throw new Error(`object store: ${key} came back without a body`);
    return response.Body.transformToByteArray();
  }

  /** Every key under `base/` (the object's files and manifest), deleted in batches. */
  private async deleteUnder(base: string): Promise<void> {
    let token: string | undefined;
    do {
      const page = await withRetries(this.retry, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${base}/`, ContinuationToken: token }),
        ),
      );
      const keys = (page.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : []));
      if (keys.length) await withRetries(this.retry, () => this.deleteKeys(keys));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  private async deleteKeys(keys: string[]): Promise<void> {
    const result = await this.client.send(
      new DeleteObjectsCommand({
        Bucket: this.bucket,
        Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true },
      }),
    );
    const failed = result.Errors?.filter((e) => e.Code !== "NoSuchKey") ?? [];
    if (failed.length)
      throw new Error(
        `object store: could not delete ${failed[0]?.Key}: ${failed[0]?.Code} ${failed[0]?.Message}`,
      );
  }
}
