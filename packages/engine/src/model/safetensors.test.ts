import { createHash } from "node:crypto";
import { readdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, test } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { writeFileAtomically } from "./files.ts";
import { decodeFloats, encodeFloats, type FloatDtype, roundToDtype } from "./float-convert.ts";
import {
  decodeSafetensors,
  encodeSafetensors,
  readSafetensors,
  readSafetensorsHeader,
  sha256File,
  writeSafetensors,
} from "./safetensors.ts";

/** Bits of each float32 value after conversion to `dtype` (16-bit patterns). */
function bitsOf(values: number[], dtype: "F16" | "BF16"): number[] {
  const bytes = encodeFloats(Float32Array.from(values), dtype);
  return [...new Uint16Array(bytes.buffer, bytes.byteOffset, values.length)];
}

function ramp(length: number, scale = 1): Float32Array {
  return Float32Array.from({ length }, (_, i) => (Math.sin(i * 1.7) + i / length) * scale);
}

/** A safetensors file assembled by hand, so tests can break any part of it. */
function rawSafetensors(header: unknown, data: Uint8Array, declaredLength?: bigint): Uint8Array {
  const json = new TextEncoder().encode(typeof header === "string" ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + json.byteLength + data.byteLength);
  new DataView(out.buffer).setBigUint64(0, declaredLength ?? BigInt(json.byteLength), true);
  out.set(json, 8);
  out.set(data, 8 + json.byteLength);
  return out;
}

async function writeRaw(bytes: Uint8Array): Promise<string> {
  const path = join(await tempDir(), "raw.safetensors");
  await writeFile(path, bytes);
  return path;
}

describe("float conversion", () => {
  test("F16 rounds to nearest, ties to even, at the known bit patterns", () => {
    expect(bitsOf([1, -2, 1 / 3, 65504, 0.5], "F16")).toEqual([0x3c00, 0xc000, 0x3555, 0x7bff, 0x3800]);
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties go to the even mantissa (1.0).
    expect(bitsOf([1 + 2 ** -11, 1 + 3 * 2 ** -11], "F16")).toEqual([0x3c00, 0x3c02]);
  });

  test("F16 overflow becomes infinity and NaN stays NaN", () => {
    expect(bitsOf([65520, -1e6, Number.POSITIVE_INFINITY], "F16")).toEqual([0x7c00, 0xfc00, 0x7c00]);
    expect(Number.isNaN(decodeFloats(encodeFloats(Float32Array.of(Number.NaN), "F16"), "F16")[0])).toBe(true);
  });

  test("F16 subnormals round correctly and values below half the smallest become zero", () => {
    expect(bitsOf([2 ** -24, 2 ** -25, 3 * 2 ** -25, 2 ** -14, -0], "F16")).toEqual([
      1, 0, 2, 0x0400, 0x8000,
    ]);
  });

  test("BF16 rounds to nearest, ties to even, and keeps NaN a NaN", () => {
    expect(bitsOf([1, 1 / 3, -2], "BF16")).toEqual([0x3f80, 0x3eab, 0xc000]);
    expect(bitsOf([1 + 2 ** -8, 1 + 3 * 2 ** -8], "BF16")).toEqual([0x3f80, 0x3f82]);
    expect(Number.isNaN(roundToDtype(Float32Array.of(Number.NaN), "BF16")[0])).toBe(true);
  });

  test("F16 and BF16 keep values within their precision (2^-11 and 2^-8 relative)", () => {
    const data = ramp(1000, 3);
    for (const [dtype, epsilon] of [
      ["F16", 2 ** -11],
      ["BF16", 2 ** -8],
    ] as const) {
      const back = roundToDtype(data, dtype);
      data.forEach((value, i) => {
        expect(Math.abs((back[i] ?? 0) - value)).toBeLessThanOrEqual(Math.abs(value) * epsilon + 1e-7);
      });
    }
  });
});

describe("safetensors round trips", () => {
  test.each<[FloatDtype, number]>([
    ["F32", 0],
    ["F16", 2 ** -11],
    ["BF16", 2 ** -8],
  ])("%s tensors read back as written, within the dtype's precision", async (dtype, epsilon) => {
    const path = join(await tempDir(), "t.safetensors");
    const weight = ramp(6 * 5);
    const bias = Float32Array.of(-1.5, 0, 2.25, 1e-3, 7);
    await writeSafetensors(path, {
      weight: { dtype, shape: [6, 5], data: weight },
      bias: { dtype, shape: [5], data: bias },
    });
    const { tensors } = await readSafetensors(path);
    for (const [name, original, shape] of [
      ["weight", weight, [6, 5]],
      ["bias", bias, [5]],
    ] as const) {
      const tensor = tensors.get(name);
      expect(tensor?.dtype).toBe(dtype);
      expect(tensor?.shape).toEqual(shape);
      original.forEach((value, i) => {
        expect(Math.abs((tensor?.data[i] ?? Number.NaN) - value)).toBeLessThanOrEqual(
          Math.abs(value) * epsilon,
        );
      });
    }
  });

  test("F32 keeps every bit, including -0, infinities and subnormals", async () => {
    const path = join(await tempDir(), "t.safetensors");
    const data = Float32Array.of(
      -0,
      Number.POSITIVE_INFINITY,
      Number.NEGATIVE_INFINITY,
      1e-45,
      3.4028234e38,
      Math.PI,
    );
    await writeSafetensors(path, new Map([["x", { shape: [6], data }]]));
    const back = (await readSafetensors(path)).tensors.get("x")?.data;
    expect(new Uint32Array(back?.buffer ?? new ArrayBuffer(0))).toEqual(new Uint32Array(data.buffer));
  });

  test("reading F16/BF16 gives exactly the values roundToDtype predicts", async () => {
    const path = join(await tempDir(), "t.safetensors");
    const data = ramp(64, 10);
    await writeSafetensors(path, {
      a: { dtype: "F16", shape: [64], data },
      b: { dtype: "BF16", shape: [64], data },
    });
    const { tensors } = await readSafetensors(path);
    expect(tensors.get("a")?.data).toEqual(roundToDtype(data, "F16"));
    expect(tensors.get("b")?.data).toEqual(roundToDtype(data, "BF16"));
  });

  test("metadata is written and read back; no metadata reads as an empty object", async () => {
    const dir = await tempDir();
    const tensors = { x: { shape: [1], data: Float32Array.of(1) } };
    await writeSafetensors(join(dir, "a.safetensors"), tensors, { format: "pt", note: "hi" });
    await writeSafetensors(join(dir, "b.safetensors"), tensors);
    expect((await readSafetensors(join(dir, "a.safetensors"))).metadata).toEqual({
      format: "pt",
      note: "hi",
    });
    expect((await readSafetensorsHeader(join(dir, "b.safetensors"))).metadata).toEqual({});
  });

  test("zero-size tensors and an empty file round trip", async () => {
    const dir = await tempDir();
    await writeSafetensors(join(dir, "a.safetensors"), {
      empty: { shape: [0, 4], data: new Float32Array(0) },
    });
    await writeSafetensors(join(dir, "b.safetensors"), {});
    expect((await readSafetensors(join(dir, "a.safetensors"))).tensors.get("empty")?.shape).toEqual([0, 4]);
    expect((await readSafetensors(join(dir, "b.safetensors"))).tensors.size).toBe(0);
  });

  test("with `keys`, only the named tensors are read", async () => {
    const path = join(await tempDir(), "t.safetensors");
    await writeSafetensors(path, {
      a: { shape: [1], data: Float32Array.of(1) },
      b: { shape: [1], data: Float32Array.of(2) },
    });
    const { tensors } = await readSafetensors(path, { keys: ["b"] });
    expect([...tensors.keys()]).toEqual(["b"]);
    expect(tensors.get("b")?.data).toEqual(Float32Array.of(2));
  });

  test("asking for a missing tensor is an error naming the file and the key", async () => {
    const path = join(await tempDir(), "t.safetensors");
    await writeSafetensors(path, { a: { shape: [1], data: Float32Array.of(1) } });
    await expect(readSafetensors(path, { keys: ["a", "nope"] })).rejects.toThrow(
      `${path}: tensor "nope" is missing`,
    );
  });
});

describe("safetensors layout on disk", () => {
  test("the header is padded with spaces to 8 bytes and every tensor starts aligned", async () => {
    const path = join(await tempDir(), "t.safetensors");
    await writeSafetensors(path, {
      odd: { dtype: "F16", shape: [3], data: Float32Array.of(1, 2, 3) },
      b: { dtype: "F32", shape: [3], data: Float32Array.of(1, 2, 3) },
      c: { dtype: "BF16", shape: [1], data: Float32Array.of(1) },
    });
    const bytes = new Uint8Array(await readFile(path));
    const headerLength = Number(new DataView(bytes.buffer).getBigUint64(0, true));
    expect(headerLength % 8).toBe(0);
    const headerText = new TextDecoder().decode(bytes.subarray(8, 8 + headerLength));
    const json = headerText.trimEnd();
    expect(headerText.slice(json.length)).toMatch(/^ {0,7}$/);
    expect(() => JSON.parse(json)).not.toThrow();
    const header = await readSafetensorsHeader(path);
    // Wider dtypes first, so the F32 tensor is not pushed off its 4-byte alignment by the 6-byte F16 one.
    expect(header.tensors.get("b")?.dataOffsets).toEqual([0, 12]);
    for (const [, info] of header.tensors) {
      expect((header.dataStart + info.dataOffsets[0]) % (info.dtype === "F32" ? 4 : 2)).toBe(0);
    }
  });

  test("the bytes do not depend on the order tensors are given in", async () => {
    const a = { shape: [2], data: Float32Array.of(1, 2) };
    const b = { dtype: "F16" as const, shape: [1], data: Float32Array.of(3) };
    expect(
      encodeSafetensors(
        new Map([
          ["a", a],
          ["b", b],
        ]),
      ),
    ).toEqual(
      encodeSafetensors(
        new Map([
          ["b", b],
          ["a", a],
        ]),
      ),
    );
  });

  test("in-memory encoding equals the file, and the returned sha256 is the file's", async () => {
    const path = join(await tempDir(), "t.safetensors");
    const tensors = [
      { name: "w", dtype: "BF16" as const, shape: [4, 4], data: ramp(16) },
      { name: "v", shape: [2], data: Float32Array.of(5, 6) },
    ];
    const written = await writeSafetensors(path, tensors, { format: "pt" });
    const fileBytes = new Uint8Array(await readFile(path));
    expect(fileBytes).toEqual(encodeSafetensors(tensors, { format: "pt" }));
    expect(written.byteLength).toBe(fileBytes.byteLength);
    expect(written.sha256).toBe(createHash("sha256").update(fileBytes).digest("hex"));
    expect(await sha256File(path)).toBe(written.sha256);
  });

  test("decodeSafetensors reads what encodeSafetensors wrote, without aliasing the input bytes", () => {
    const bytes = encodeSafetensors({ x: { shape: [2], data: Float32Array.of(1.5, -2) } }, { k: "v" });
    const decoded = decodeSafetensors(bytes, "mem");
    expect(decoded.metadata).toEqual({ k: "v" });
    const x = decoded.tensors.get("x")?.data ?? new Float32Array(0);
    expect(x).toEqual(Float32Array.of(1.5, -2));
    x[0] = 99;
    expect(decodeSafetensors(bytes, "mem").tensors.get("x")?.data[0]).toBe(1.5);
  });
});

describe("atomic writes", () => {
  test("overwriting replaces the file and leaves no temporary file behind", async () => {
    const dir = await tempDir();
    const path = join(dir, "t.safetensors");
    await writeSafetensors(path, { x: { shape: [1], data: Float32Array.of(1) } });
    await writeSafetensors(path, { x: { shape: [1], data: Float32Array.of(2) } });
    expect(await readdir(dir)).toEqual(["t.safetensors"]);
    expect((await readSafetensors(path)).tensors.get("x")?.data).toEqual(Float32Array.of(2));
  });

  test("a write that fails midway leaves the previous file intact and no temporary file", async () => {
    const dir = await tempDir();
    const path = join(dir, "t.bin");
    await writeFile(path, "old");
    const failing = writeFileAtomically(path, async (write) => {
      await write(new TextEncoder().encode("half of the new "));
      throw new Error("disk full");
    });
    await expect(failing).rejects.toThrow("disk full");
    expect(await readdir(dir)).toEqual(["t.bin"]);
    expect(await readFile(path, "utf8")).toBe("old");
  });

  test("a rejected write leaves the previous file intact and no temporary file", async () => {
    const dir = await tempDir();
    const path = join(dir, "t.safetensors");
    await writeSafetensors(path, { x: { shape: [1], data: Float32Array.of(1) } });
    await expect(writeSafetensors(path, { x: { shape: [3], data: Float32Array.of(1) } })).rejects.toThrow();
    expect(await readdir(dir)).toEqual(["t.safetensors"]);
    expect((await readSafetensors(path)).tensors.get("x")?.data).toEqual(Float32Array.of(1));
  });
});

describe("writeSafetensors rejects bad input, naming the file and tensor", () => {
  test("data whose length does not match the shape", async () => {
    const path = join(await tempDir(), "t.safetensors");
    await expect(writeSafetensors(path, { w: { shape: [2, 3], data: new Float32Array(5) } })).rejects.toThrow(
      `${path}: tensor "w": shape [2, 3] holds 6 values but data has 5`,
    );
  });

  test("a name listed twice, the reserved __metadata__ name, and an unknown dtype", () => {
    const one = { shape: [1], data: Float32Array.of(1) };
    expect(() =>
      encodeSafetensors([
        { name: "a", ...one },
        { name: "a", ...one },
      ]),
    ).toThrow(/tensor "a" is listed twice/);
    expect(() => encodeSafetensors({ __metadata__: one })).toThrow(/"__metadata__" is not a tensor name/);
    const badDtype = JSON.parse('{"shape":[1],"dtype":"I8"}');
    expect(() => encodeSafetensors({ a: { ...badDtype, data: Float32Array.of(1) } })).toThrow(
      /cannot write dtype "I8"/,
    );
  });
});

describe("corrupt files are rejected with the file and tensor named", () => {
  const f32 = (...values: number[]) => new Uint8Array(Float32Array.from(values).buffer);

  test("a file shorter than the 8-byte length prefix", async () => {
    const path = await writeRaw(new Uint8Array(5));
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: 5 bytes is too short for the 8-byte header length`,
    );
  });

  test("a header length beyond the end of the file", async () => {
    const path = await writeRaw(rawSafetensors({}, new Uint8Array(0), 1000n));
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: header length 1000 runs past the end of the file`,
    );
  });

  test("a header that is not JSON, or not a JSON object", async () => {
    await expect(readSafetensors(await writeRaw(rawSafetensors("{oops", new Uint8Array(0))))).rejects.toThrow(
      /header is not valid UTF-8 JSON/,
    );
    await expect(readSafetensors(await writeRaw(rawSafetensors("[1]", new Uint8Array(0))))).rejects.toThrow(
      /header must be a JSON object/,
    );
  });

  test("an entry without data_offsets", async () => {
    const path = await writeRaw(rawSafetensors({ w: { dtype: "F32", shape: [1] } }, f32(1)));
    await expect(readSafetensors(path)).rejects.toThrow(`${path}: tensor "w": data_offsets: is missing`);
  });

  test("metadata values that are not strings", async () => {
    const path = await writeRaw(rawSafetensors({ __metadata__: { n: 1 } }, new Uint8Array(0)));
    await expect(readSafetensors(path)).rejects.toThrow(`${path}: __metadata__: n:`);
  });

  test("an unknown dtype", async () => {
    const path = await writeRaw(
      rawSafetensors({ w: { dtype: "F12", shape: [1], data_offsets: [0, 4] } }, f32(1)),
    );
    await expect(readSafetensors(path)).rejects.toThrow(`${path}: tensor "w": unknown dtype "F12"`);
  });

  test("offsets past the end of the data", async () => {
    const path = await writeRaw(
      rawSafetensors({ w: { dtype: "F32", shape: [2], data_offsets: [4, 12] } }, f32(1, 2)),
    );
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: tensor "w": data_offsets [4, 12] run past the data section (8 bytes)`,
    );
  });

  test("reversed offsets", async () => {
    const path = await writeRaw(
      rawSafetensors({ w: { dtype: "F32", shape: [0], data_offsets: [4, 0] } }, f32(1)),
    );
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: tensor "w": data_offsets [4, 0] are reversed`,
    );
  });

  test("overlapping tensors", async () => {
    const header = {
      a: { dtype: "F32", shape: [2], data_offsets: [0, 8] },
      b: { dtype: "F32", shape: [2], data_offsets: [4, 12] },
    };
    const path = await writeRaw(rawSafetensors(header, f32(1, 2, 3)));
    await expect(readSafetensors(path)).rejects.toThrow(`${path}: tensor "b" overlaps tensor "a"`);
  });

  test("bytes that belong to no tensor, between tensors or at the end", async () => {
    const gap = {
      a: { dtype: "F32", shape: [1], data_offsets: [0, 4] },
      b: { dtype: "F32", shape: [1], data_offsets: [8, 12] },
    };
    await expect(readSafetensors(await writeRaw(rawSafetensors(gap, f32(1, 2, 3))))).rejects.toThrow(
      /bytes 4\.\.8 before tensor "b" belong to no tensor/,
    );
    const tail = { a: { dtype: "F32", shape: [1], data_offsets: [0, 4] } };
    await expect(readSafetensors(await writeRaw(rawSafetensors(tail, f32(1, 2))))).rejects.toThrow(
      /4 bytes after the last tensor belong to no tensor/,
    );
  });

  test("a shape whose size does not match the byte length", async () => {
    const path = await writeRaw(
      rawSafetensors({ w: { dtype: "BF16", shape: [3], data_offsets: [0, 8] } }, f32(1, 2)),
    );
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: tensor "w": shape [3] of BF16 needs 6 bytes but data_offsets [0, 8] span 8`,
    );
  });

  test("a dtype we do not convert fails only when that tensor is read", async () => {
    const header = {
      ids: { dtype: "I64", shape: [1], data_offsets: [0, 8] },
      w: { dtype: "F32", shape: [1], data_offsets: [8, 12] },
    };
    const path = await writeRaw(rawSafetensors(header, f32(0, 0, 7)));
    expect((await readSafetensors(path, { keys: ["w"] })).tensors.get("w")?.data).toEqual(Float32Array.of(7));
    await expect(readSafetensors(path)).rejects.toThrow(
      `${path}: tensor "ids" has dtype I64; only F32, F16, BF16 can be loaded`,
    );
  });

  test("in-memory decoding applies the same checks", () => {
    const bytes = rawSafetensors({ w: { dtype: "F32", shape: [2], data_offsets: [0, 8] } }, f32(1));
    expect(() => decodeSafetensors(bytes, "adapter_model.safetensors")).toThrow(
      'adapter_model.safetensors: tensor "w": data_offsets [0, 8] run past the data section (4 bytes)',
    );
  });
});
