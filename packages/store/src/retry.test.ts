// Which store errors a job resumes from (isTransientStoreError): the S3 service
// or its connection failed, not the request.
import { NoSuchKey, S3ServiceException } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { ChecksumMismatchError } from "./object-store.ts";
import { isTransientStoreError } from "./retry.ts";

const s3Error = (status: number) =>
  new S3ServiceException({
    name: status === 503 ? "SlowDown" : "InternalError",
    $fault: status >= 500 ? "server" : "client",
    $metadata: { httpStatusCode: status },
  });

describe("isTransientStoreError", () => {
  it("is true of a 5xx, a timeout and throttling", () => {
    for (const status of [500, 502, 503, 408, 429]) expect(isTransientStoreError(s3Error(status))).toBe(true);
  });

  it("looks through the store's own wrapper to the S3 error under it", () => {
    const wrapped = new Error("object store: storing s3://b/k failed: injected", { cause: s3Error(500) });
    expect(isTransientStoreError(wrapped)).toBe(true);
    expect(isTransientStoreError(new Error("object store: refused", { cause: s3Error(403) }))).toBe(false);
  });

  it("is false of a request the store refused or an object that is not what it should be", () => {
    expect(isTransientStoreError(s3Error(403))).toBe(false);
    expect(
      isTransientStoreError(new NoSuchKey({ message: "gone", $metadata: { httpStatusCode: 404 } })),
    ).toBe(false);
    expect(isTransientStoreError(new ChecksumMismatchError("bytes differ"))).toBe(false);
    expect(isTransientStoreError(new TypeError("a bug"))).toBe(false);
  });
});
