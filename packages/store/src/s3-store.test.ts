// The S3-compatible store against a real S3 server process (s3rver on a
// loopback port): whole objects only, multipart uploads, checksums verified on
// load, retried downloads, deletes that leave nothing behind.
import { ListObjectsV2Command, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStoreEnv } from "./env.ts";
import { ChecksumMismatchError, ObjectNotFoundError } from "./object-store.ts";
import { createS3Client, MANIFEST, S3Store } from "./s3-store.ts";
import { type S3TestServer, startS3Server, TcpForwarder } from "./testing/index.ts";

const MiB = 1024 * 1024;
const FAST_RETRY = { attempts: 3, firstDelayMs: 20 };

let server: S3TestServer;
let client: S3Client;

function bytes(length: number, seed: number): Uint8Array {
  const out = new Uint8Array(length);
  for (let i = 0; i < length; i++) out[i] = (i * 31 + seed) & 0xff;
  return out;
}

/** What the stores' S3 clients sent, in order: the command and the key it named. */
const commands: { command: string; key: string | undefined }[] = [];

function storeAt(prefix: string, endpoint = server.endpoint): S3Store {
  const s3 = createS3Client(readStoreEnv(server.env(prefix, endpoint)));
  s3.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as { Key?: string };
      commands.push({ command: context.commandName ?? "", key: input.Key });
      return next(args);
    },
    { step: "initialize" },
  );
  return new S3Store({
    client: s3,
    bucket: server.bucket,
    prefix,
    partBytes: 5 * MiB,
    retry: FAST_RETRY,
  });
}

async function keysUnder(prefix: string): Promise<string[]> {
  const listed = await client.send(new ListObjectsV2Command({ Bucket: server.bucket, Prefix: `${prefix}/` }));
  return (listed.Contents ?? []).flatMap((o) => (o.Key ? [o.Key] : [])).sort();
}

beforeAll(async () => {
  server = await startS3Server();
  client = createS3Client(readStoreEnv(server.env("any")));
});
afterAll(() => server?.stop());

describe("the S3-compatible store", () => {
  it("stores an object's files and reads them back, a large file in parts", async () => {
    const store = storeAt("roundtrip");
    const files = new Map([
      ["adapter_config.json", new TextEncoder().encode('{"r":2}')],
      ["adapter_model.safetensors", bytes(12 * MiB + 3, 1)],
    ]);
    const stored = await store.put("team/a/sampler/step-1", files);
    expect(stored.path).toBe(`s3://${server.bucket}/roundtrip/team/a/sampler/step-1`);
    expect(stored.sizeBytes).toBe(12 * MiB + 3 + 7);
    const read = await store.get(stored.path, stored.checksum);
    expect([...read.keys()]).toEqual(["adapter_config.json", "adapter_model.safetensors"]);
    expect(
      Buffer.compare(
        Buffer.from(read.get("adapter_model.safetensors") ?? []),
        Buffer.from(files.get("adapter_model.safetensors") ?? []),
      ),
    ).toBe(0);
    // 12 MiB in 5 MiB parts: a multipart upload of 3 parts; the small file in one request.
    const model = "roundtrip/team/a/sampler/step-1/adapter_model.safetensors";
    expect(commands.filter((c) => c.key === model).map((c) => c.command)).toEqual([
      "CreateMultipartUploadCommand",
      "UploadPartCommand",
      "UploadPartCommand",
      "UploadPartCommand",
      "CompleteMultipartUploadCommand",
      "GetObjectCommand",
    ]);
    expect(
      commands
        .filter((c) => c.key === "roundtrip/team/a/sampler/step-1/adapter_config.json")
        .map((c) => c.command),
    ).toEqual(["PutObjectCommand", "GetObjectCommand"]);
    await expect(store.put("team/a/sampler/step-1", files)).rejects.toThrow(
      /already exists and is immutable/,
    );
  });

  it("refuses an object whose stored bytes no longer match, and one whose recorded checksum differs", async () => {
    const store = storeAt("mismatch");
    const stored = await store.put("t/a/state/c", new Map([["training_state.safetensors", bytes(4096, 2)]]));
    await expect(store.get(stored.path, "sha256:0000")).rejects.toBeInstanceOf(ChecksumMismatchError);
    await client.send(
      new PutObjectCommand({
        Bucket: server.bucket,
        Key: "mismatch/t/a/state/c/training_state.safetensors",
        Body: bytes(4096, 3),
      }),
    );
    await expect(store.get(stored.path, stored.checksum)).rejects.toBeInstanceOf(ChecksumMismatchError);
  });

  it("never shows a reader an object whose upload has not finished", async () => {
    const store = storeAt("partial");
    const files = new Map([
      ["a.bin", bytes(6 * MiB, 4)],
      ["b.bin", bytes(6 * MiB, 5)],
    ]);
    const path = `s3://${server.bucket}/partial/t/a/sampler/v`;
    let done = false;
    const putting = store.put("t/a/sampler/v", files).finally(() => {
      done = true;
    });
    const seen: string[] = [];
    while (!done) {
      seen.push(
        await store.get(path).then(
          () => (done ? "after" : "whole"),
          (error: unknown) => (error instanceof ObjectNotFoundError ? "missing" : String(error)),
        ),
      );
    }
    await putting;
    expect(seen).toContain("missing");
    // While the put ran, the object was missing; a read that overlapped its end may find it whole
    // (every successful read is checked against the manifest's checksums), never partial or corrupt.
    expect(seen.filter((s) => s !== "missing" && s !== "whole" && s !== "after")).toEqual([]);
    expect((await store.get(path)).size).toBe(2);
  });

  it("leaves no readable object behind when the network fails midway through an upload", async () => {
    const forwarder = await TcpForwarder.start(
      { host: "127.0.0.1", port: 0 },
      { host: "127.0.0.1", port: server.port },
    );
    try {
      const flaky = storeAt("failed", forwarder.url);
      // The small file goes up; 2 MiB into the large one the link goes down for good.
      forwarder.failAfterSentBytes(2 * MiB);
      const files = new Map([
        ["a.bin", bytes(1024, 6)],
        ["b.bin", bytes(12 * MiB, 7)],
      ]);
      await expect(flaky.put("t/a/sampler/v", files)).rejects.toThrow(/storing .* failed/);
      expect(await keysUnder("failed/t/a/sampler/v")).toEqual(["failed/t/a/sampler/v/a.bin"]);
      await expect(
        storeAt("failed").get(`s3://${server.bucket}/failed/t/a/sampler/v`),
      ).rejects.toBeInstanceOf(ObjectNotFoundError);
    } finally {
      await forwarder.close();
    }
  });

  it("retries a download cut off mid-body, and still verifies it", async () => {
    const store = storeAt("cut");
    const stored = await store.put("t/a/sampler/v", new Map([["m.bin", bytes(2 * MiB, 7)]]));
    const forwarder = await TcpForwarder.start(
      { host: "127.0.0.1", port: 0 },
      { host: "127.0.0.1", port: server.port },
    );
    try {
      forwarder.cutResponses(1, 256 * 1024);
      const read = await storeAt("cut", forwarder.url).get(stored.path, stored.checksum);
      expect(read.get("m.bin")?.byteLength).toBe(2 * MiB);
      expect(forwarder.cuts).toBe(1);
    } finally {
      await forwarder.close();
    }
  });

  it("deletes every file of an object, its manifest first; deleting again is no error", async () => {
    const store = storeAt("delete");
    const stored = await store.put(
      "t/a/state/c",
      new Map([
        ["x.bin", bytes(100, 8)],
        ["y.bin", bytes(6 * MiB, 9)],
      ]),
    );
    expect(await keysUnder("delete/t/a/state/c")).toEqual([
      `delete/t/a/state/c/${MANIFEST}`,
      "delete/t/a/state/c/x.bin",
      "delete/t/a/state/c/y.bin",
    ]);
    await store.delete(stored.path);
    expect(await keysUnder("delete/t/a/state/c")).toEqual([]);
    await expect(store.get(stored.path)).rejects.toBeInstanceOf(ObjectNotFoundError);
    await store.delete(stored.path);
  });

  it("refuses paths outside its bucket and prefix", async () => {
    const store = storeAt("scoped");
    await expect(store.get(`s3://${server.bucket}/other/t/a`)).rejects.toBeInstanceOf(RangeError);
    await expect(store.get("s3://another-bucket/scoped/t/a")).rejects.toBeInstanceOf(RangeError);
    await expect(store.delete(`s3://${server.bucket}/scoped/../other/x`)).rejects.toBeInstanceOf(RangeError);
    await expect(store.get("/tmp/scoped/t/a")).rejects.toBeInstanceOf(RangeError);
  });
});
