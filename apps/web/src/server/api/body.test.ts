import { describe, expect, it } from "vitest";
import { HttpError, jsonMayHoldNul, nulByteAt, parseJsonText, refuseNulBytes } from "./body.ts";

describe("the NUL-byte rule", () => {
  it("names the first string or key holding a NUL byte by its field path", () => {
    expect(nulByteAt({ name: "ok", data: [1, { tag: "a\u0000" }] })).toBe("data.1.tag");
    expect(nulByteAt({ config: { "k\u0000": 1 } })).toBe("config.k\\u0000");
    expect(nulByteAt("x\u0000")).toBe("body");
    expect(nulByteAt({ jobId: "x\u0000" }, "params")).toBe("params.jobId");
    expect(nulByteAt({ name: "fine", list: [1, 2, null, true] })).toBeNull();
  });

  it("reads binary fields as values, not text", () => {
    expect(nulByteAt({ tokens: new Uint8Array([0, 0, 0]), name: "m" })).toBeNull();
  });

  it("refuses with a 400 that names the field", () => {
    let refusal: unknown;
    try {
      refuseNulBytes({ email: "a\u0000@b" });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toBeInstanceOf(HttpError);
    expect((refusal as HttpError).status).toBe(400);
    expect((refusal as HttpError).message).toBe(
      "email: contains a NUL byte (\\u0000), which no text field accepts",
    );
  });

  it("is applied to every JSON body as it is parsed, an escaped backslash being no NUL byte", () => {
    expect(() => parseJsonText('{"name": "a\\u0000"}')).toThrow(/^name: contains a NUL byte/);
    expect(parseJsonText('{"name": "a\\\\u0000"}')).toEqual({ name: "a\\u0000" });
    expect(jsonMayHoldNul('{"name": "plain"}')).toBe(false);
  });
});
