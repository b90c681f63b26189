import { describe, expect, it } from "vitest";
import { parseStoreTarget, readStoreEnv } from "./env.ts";

describe("the store's settings", () => {
  it("default to the local folder and read s3://bucket/prefix", () => {
    expect(readStoreEnv({}).OPENTINKER_STORE).toEqual({ kind: "local", root: null });
    expect(parseStoreTarget("/mnt/shared/store")).toEqual({ kind: "local", root: "/mnt/shared/store" });
    expect(parseStoreTarget("s3://my-bucket/opentinker/prod/")).toEqual({
      kind: "s3",
      bucket: "my-bucket",
      prefix: "opentinker/prod",
    });
    expect(parseStoreTarget("s3://my-bucket")).toEqual({ kind: "s3", bucket: "my-bucket", prefix: "" });
  });

  it("name what is wrong", () => {
    expect(() => readStoreEnv({ OPENTINKER_STORE: "relative/dir" })).toThrow(
      /OPENTINKER_STORE: OPENTINKER_STORE must be s3:\/\/bucket\/prefix or an absolute folder/,
    );
    expect(() => readStoreEnv({ OPENTINKER_STORE: "s3://Bad_Bucket/x" })).toThrow(/not a valid bucket name/);
    expect(() => readStoreEnv({ OPENTINKER_STORE: "s3://bucket/a//b" })).toThrow(/not a valid key prefix/);
    expect(() => readStoreEnv({ AWS_ACCESS_KEY_ID: "k" })).toThrow(/must be set together/);
    expect(() => readStoreEnv({ AWS_ENDPOINT_URL: "not a url" })).toThrow(/AWS_ENDPOINT_URL must be a URL/);
    expect(() => readStoreEnv({ OPENTINKER_STORE_PART_MB: "1" })).toThrow(/OPENTINKER_STORE_PART_MB/);
  });
});
