// A real S3-compatible server for tests: s3rver, as its own process on a
// loopback port, with one bucket, its objects in a temporary folder.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";

/** s3rver's fixed credentials. */
export const S3RVER_CREDENTIALS = { AWS_ACCESS_KEY_ID: "S3RVER", AWS_SECRET_ACCESS_KEY: "S3RVER" };

export interface S3TestServer {
  endpoint: string;
  port: number;
  bucket: string;
  /** The settings a process uses to store under `s3://bucket/prefix` here (through `endpoint`, or another address). */
  env(prefix: string, endpoint?: string): Record<string, string>;

  stop(): Promise<void>;
}

export async function startS3Server(
  options: { bucket?: string; address?: string } = {},
): Promise<S3TestServer> {
  const bucket = options.bucket ?? "opentinker-test";
  const address = options.address ?? "127.0.0.1";
  const dir = await mkdtemp(path.join(tmpdir(), "opentinker-s3-"));
  const bin = path.join(
    path.dirname(createRequire(import.meta.url).resolve("s3rver/package.json")),
    "bin/s3rver.js",
  );
  const child: ChildProcess = spawn(
    process.execPath,
    [bin, "-d", dir, "-a", address, "-p", "0", "--configure-bucket", bucket, "--no-vhost-buckets"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  const output: string[] = [];
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const port = await new Promise<number>((resolve, reject) => {
    for (const stream of [child.stdout, child.stderr])
      if (stream)
        createInterface({ input: stream }).on("line", (line) => {
          // Every request is logged; keep the last lines for a failure's message.
          output.push(line);
          if (output.length > 50) output.shift();
          const listening = /listening on \S+:(\d+)/.exec(line);
          if (listening) resolve(Number(listening[1]));
        });
    void exited.then(() => reject(new Error(`s3rver exited before it listened:\n${output.join("\n")}`)));
  });
  const endpoint = `http://${address}:${port}`;
  return {
    endpoint,
    port,
    bucket,
    env: (prefix, via = endpoint) => ({
      OPENTINKER_STORE: `s3://${bucket}/${prefix}`,
      AWS_ENDPOINT_URL: via,
      AWS_REGION: "us-east-1",
      ...S3RVER_CREDENTIALS,
    }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
      await exited;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
