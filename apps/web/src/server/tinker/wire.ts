// The protobuf half of the Tinker protocol (tinker.proto, read by protobufjs):
// forward/backward requests in, forward/backward and sampling results out.
// Requests decode to the same JSON shapes the 0.24 JSON form sends
// (schemas.ts), so one conversion serves both.
import { readFileSync } from "node:fs";
import type { ForwardBackwardOutput, SampleResponse, TensorData } from "@opentinker/protocol";
import protobuf from "protobufjs";
import { refuseNulBytes } from "../api/body.ts";
import type { TinkerDatum, TinkerForwardBackwardBody } from "./schemas.ts";

const root = protobuf.parse(readFileSync(new URL("./tinker.proto", import.meta.url), "utf8"), {
  keepCase: true,
}).root;
const message = (name: string) => root.lookupType(`tinker_public.${name}`);
const ForwardBackwardRequest = message("ForwardBackwardRequest");
const ForwardBackwardOutputMessage = message("ForwardBackwardOutput");
const SampleResponseMessage = message("SampleResponse");

export const PROTOBUF = "application/x-protobuf";

const DTYPE = { FLOAT32: 1, INT64: 2, INT32: 3, BFLOAT16: 4 } as const;

/** A wire error in a request body: answered 400 with this message. */
export class WireError extends Error {}

function view(bytes: Uint8Array, width: number, what: string): DataView {
  if (bytes.byteLength % width !== 0)
    throw new WireError(`${what}: ${bytes.byteLength} bytes is not a whole number of ${width}-byte values`);
  return new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** Little-endian values of a dtype, as numbers (int64 beyond 2^53 is refused). */
function readValues(bytes: Uint8Array, dtype: number, what: string): number[] {
  if (dtype === DTYPE.FLOAT32) {
    const v = view(bytes, 4, what);
    return Array.from({ length: v.byteLength / 4 }, (_, i) => v.getFloat32(i * 4, true));
  }
  if (dtype === DTYPE.INT32) {
    const v = view(bytes, 4, what);
    return Array.from({ length: v.byteLength / 4 }, (_, i) => v.getInt32(i * 4, true));
  }
  if (dtype === DTYPE.INT64) {
    const v = view(bytes, 8, what);
    return Array.from({ length: v.byteLength / 8 }, (_, i) => {
      const value = v.getBigInt64(i * 8, true);
      if (value > BigInt(Number.MAX_SAFE_INTEGER) || value < BigInt(Number.MIN_SAFE_INTEGER))
        throw new WireError(`${what}: int64 value ${value} is out of range`);
      return Number(value);
    });
  }
  throw new WireError(`${what}: unsupported dtype ${dtype} (send float32 or int64)`);
}

function writeValues(values: readonly number[], dtype: "float32" | "int32" | "int64"): Uint8Array {
  const width = dtype === "int64" ? 8 : 4;
  const out = new Uint8Array(values.length * width);
  const v = new DataView(out.buffer);
  values.forEach((x, i) => {
    if (dtype === "float32") v.setFloat32(i * 4, x, true);
    else if (dtype === "int32") v.setInt32(i * 4, x, true);
    else v.setBigInt64(i * 8, BigInt(Math.trunc(x)), true);
  });
  return out;
}

interface WireTensor {
  dense?: Uint8Array;
  sparse_csr?: { values?: Uint8Array; crow_indices?: Uint8Array; col_indices?: Uint8Array };
  dtype?: number;
  shape?: (number | { toNumber(): number })[];
}

const num = (x: number | { toNumber(): number }) => (typeof x === "number" ? x : x.toNumber());

/** What the tensors of one forward/backward body may declare, from the model it trains. */
export interface TensorLimits {
  /** Values one loss input may hold: every loss input has one value per target position. */
  maxValues: number;
  /** Where that bound comes from, for messages ("one per position of tiny's context"). */
  source: string;
}

/** Dimensions a declared shape may have (Tinker's loss inputs are [positions] or [1, positions]). */
export const MAX_TENSOR_DIMS = 4;

/** Values any one tensor may declare, whatever the model (a body names a model it may not have). */
export const MAX_TENSOR_VALUES = 1 << 20;

/** The limits when the model is not known here (the call itself then answers what is wrong with it). */
export const ABSOLUTE_TENSOR_LIMITS: TensorLimits = {
  maxValues: MAX_TENSOR_VALUES,
  source: "the service's limit for any tensor",
};

/** Refuses a declared shape that is malformed or holds more values than `limits` allow, before anything is allocated. */
function checkShape(shape: number[], limits: TensorLimits, what: string): void {
  const shown = `shape [${shape.join(", ")}]`;
  if (shape.length > MAX_TENSOR_DIMS)
    throw new WireError(`${what}: ${shown} has ${shape.length} dimensions; at most ${MAX_TENSOR_DIMS}`);
  if (shape.some((d) => !Number.isSafeInteger(d) || d < 0))
    throw new WireError(`${what}: ${shown} has a dimension that is negative or too large`);
  const values = shape.reduce((a, b) => a * b, 1);
  const bound = limits.maxValues <= MAX_TENSOR_VALUES ? limits : ABSOLUTE_TENSOR_LIMITS;
  if (values > bound.maxValues)
    throw new WireError(
      `${what}: ${shown} declares ${values} values; that exceeds the ${bound.maxValues} a loss input may hold (${bound.source})`,
    );
}

/** Int64 row pointers that start at 0, never decrease and end at the number of stored values. */
function checkRowPointers(crow: number[], rows: number, stored: number, what: string): void {
  if (crow.length !== rows + 1)
    throw new WireError(
      `${what}: a sparse tensor needs rows + 1 = ${rows + 1} row pointers, got ${crow.length}`,
    );
  const ordered = crow.every((p, r) => (r === 0 ? p === 0 : p >= (crow[r - 1] as number)));
  if (!ordered || crow[rows] !== stored)
    throw new WireError(`${what}: row pointers must rise from 0 to the ${stored} stored values`);
}

/** A tensor as the JSON form's TensorData (dense; CSR is expanded once its declared shape is checked). */
function tensorFromWire(
  t: WireTensor,
  limits: TensorLimits,
  what: string,
): TinkerDatum["loss_fn_inputs"][string] {
  const dtype = t.dtype ?? 0;
  const shape = (t.shape ?? []).map(num);
  checkShape(shape, limits, what);
  const name = dtype === DTYPE.FLOAT32 ? "float32" : "int64";
  if (t.sparse_csr) {
    const [rows, cols] = shape;
    if (shape.length !== 2 || rows === undefined || cols === undefined)
      throw new WireError(`${what}: a sparse tensor needs a 2-D shape`);
    const values = readValues(t.sparse_csr.values ?? new Uint8Array(), dtype, `${what}.values`);
    const crow = readValues(
      t.sparse_csr.crow_indices ?? new Uint8Array(),
      DTYPE.INT64,
      `${what}.crow_indices`,
    );
    const col = readValues(t.sparse_csr.col_indices ?? new Uint8Array(), DTYPE.INT64, `${what}.col_indices`);
    if (col.length !== values.length)
      throw new WireError(`${what}: ${col.length} column indices for ${values.length} values`);
    checkRowPointers(crow, rows, values.length, what);
    const dense = new Array<number>(rows * cols).fill(0);
    for (let r = 0; r < rows; r++)
      for (let k = crow[r] as number; k < (crow[r + 1] as number); k++) {
        const c = col[k] as number;
        if (c < 0 || c >= cols) throw new WireError(`${what}: sparse index ${k} is out of range`);
        dense[r * cols + c] = values[k] as number;
      }
    return { dtype: name, shape, data: dense };
  }
  const data = readValues(t.dense ?? new Uint8Array(), dtype, what);
  return { dtype: name, data, ...(shape.length > 0 ? { shape } : {}) };
}

interface WireChunk {
  encoded_text?: { tokens?: Uint8Array };
  image?: { data?: Uint8Array; format?: string; expected_tokens?: number };
  dmel?: unknown;
}

function chunkFromWire(c: WireChunk, what: string): TinkerDatum["model_input"]["chunks"][number] {
  if (c.encoded_text)
    return {
      type: "encoded_text",
      tokens: readValues(c.encoded_text.tokens ?? new Uint8Array(), DTYPE.INT32, `${what}.tokens`),
    };
  if (c.image)
    return {
      type: "image",
      data: Buffer.from(c.image.data ?? new Uint8Array()).toString("base64"),
      format: c.image.format ?? "",
      ...(c.image.expected_tokens !== undefined ? { expected_tokens: c.image.expected_tokens } : {}),
    };
  throw new WireError(`${what}: only encoded_text and image chunks are supported`);
}

interface WireForwardBackward {
  model_id: string;
  seq_id: number;
  data: { model_input: WireChunk[]; loss_fn_inputs: Record<string, WireTensor> }[];
  loss_fn: string;
  loss_fn_config: Record<string, number>;
  forward_only: boolean;
}

function readForwardBackward(bytes: Uint8Array): WireForwardBackward {
  let decoded: WireForwardBackward;
  try {
    decoded = ForwardBackwardRequest.toObject(ForwardBackwardRequest.decode(bytes), {
      defaults: true,
      arrays: true,
      objects: true,
    }) as WireForwardBackward;
  } catch (error) {
    throw new WireError(`malformed protobuf body: ${(error as Error).message}`);
  }
  // Its strings (ids, names, keys) follow every front's rule; its bytes are values, not text.
  refuseNulBytes(decoded);
  return decoded;
}

/**
 * A protobuf forward/backward request as the JSON form's body (plus
 * `forward_only`). The tensors' declared shapes are checked against the limits
 * of the model the body names (`limitsFor`, looked up once the message is
 * read) before any tensor is expanded, so a small body cannot declare a huge one.
 */
export async function decodeForwardBackward(
  bytes: Uint8Array,
  limitsFor: (modelId: string) => TensorLimits | Promise<TensorLimits>,
): Promise<TinkerForwardBackwardBody & { forward_only: boolean }> {
  const d = readForwardBackward(bytes);
  const limits = await limitsFor(d.model_id);
  const at = "forward_backward_input.data";
  return {
    model_id: d.model_id,
    // seq_id 0 is what the SDK sends when it has none.
    ...(d.seq_id > 0 ? { seq_id: d.seq_id } : {}),
    forward_backward_input: {
      loss_fn: d.loss_fn,
      ...(Object.keys(d.loss_fn_config).length > 0 ? { loss_fn_config: d.loss_fn_config } : {}),
      data: d.data.map((datum, i) => ({
        model_input: {
          chunks: datum.model_input.map((c, j) => chunkFromWire(c, `${at}.${i}.model_input.${j}`)),
        },
        loss_fn_inputs: Object.fromEntries(
          Object.entries(datum.loss_fn_inputs).map(([k, t]) => [
            k,
            tensorFromWire(t, limits, `${at}.${i}.loss_fn_inputs.${k}`),
          ]),
        ),
      })),
    },
    forward_only: d.forward_only,
  };
}

/** Our loss-output field names (camelCase) as Tinker's (snake_case). */
export const snakeCase = (name: string) => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** Per-datum outputs as one batched record per field (datum i's values between offsets i and i + 1). */
function batched(values: readonly TensorData[]) {
  const first = values[0];
  const dtype = first?.dtype === "int64" ? "int64" : "float32";
  const width = dtype === "int64" ? 8 : 4;
  const offsets: number[] = [0];
  for (const t of values) offsets.push((offsets.at(-1) as number) + t.data.length * width);
  const trailing = first?.shape && first.shape.length > 1 ? first.shape.slice(1) : [];
  return {
    data: writeValues(
      values.flatMap((t) => t.data),
      dtype,
    ),
    offsets: writeValues(offsets, "int64"),
    dtype: dtype === "int64" ? DTYPE.INT64 : DTYPE.FLOAT32,
    trailing_shape: trailing,
  };
}

export function encodeForwardBackwardOutput(output: ForwardBackwardOutput): Uint8Array {
  const names = [...new Set(output.lossFnOutputs.flatMap((o) => Object.keys(o)))];
  const fields = Object.fromEntries(
    names.map((name) => [
      snakeCase(name),
      batched(output.lossFnOutputs.map((o) => o[name] ?? { dtype: "float32", data: [] })),
    ]),
  );
  const msg = ForwardBackwardOutputMessage.fromObject({
    loss_fn_output_type: "ArrayRecord",
    loss_fn_outputs: [{ type_tag: "ArrayRecord", fields, num_datums: output.lossFnOutputs.length }],
    metrics: output.metrics,
  });
  return ForwardBackwardOutputMessage.encode(msg).finish();
}

/** The value the SDK reads as "no entry" in a top-k matrix (with token id 0). */
const MASK_LOGPROB = -99999;

/**
 * Top-k prompt logprobs as the SDK's two dense [prompt length, k] matrices
 * (int32 token ids, float32 logprobs); a position without entries, or a row
 * shorter than k, is filled with (0, MASK_LOGPROB).
 */
function topkMatrices(rows: NonNullable<SampleResponse["topkPromptLogprobs"]>) {
  const k = Math.max(0, ...rows.map((r) => r?.length ?? 0));
  const ids = new Int32Array(rows.length * k);
  const logprobs = new Float32Array(rows.length * k).fill(MASK_LOGPROB);
  for (const [i, row] of rows.entries())
    for (const [j, [token, logprob]] of (row ?? []).entries()) {
      ids[i * k + j] = token;
      logprobs[i * k + j] = logprob;
    }
  return {
    token_ids: new Uint8Array(ids.buffer),
    logprobs: new Uint8Array(logprobs.buffer),
    k,
    prompt_length: rows.length,
  };
}

export function encodeSampleResponse(response: SampleResponse): Uint8Array {
  const msg = SampleResponseMessage.fromObject({
    sequences: response.sequences.map((s) => ({
      stop_reason: s.stopReason === "length" ? 1 : 0,
      tokens: writeValues(s.tokens, "int32"),
      logprobs: writeValues(s.logprobs, "float32"),
    })),
    ...(response.promptLogprobs
      ? {
          prompt_logprobs: writeValues(
            response.promptLogprobs.map((v) => v ?? Number.NaN),
            "float32",
          ),
        }
      : {}),
    ...(response.topkPromptLogprobs
      ? { topk_prompt_logprobs: topkMatrices(response.topkPromptLogprobs) }
      : {}),
  });
  return SampleResponseMessage.encode(msg).finish();
}

/** For tests and tools: the protobuf messages, to build requests and read results as a client does. */
export const wireMessages = { ForwardBackwardRequest, ForwardBackwardOutputMessage, SampleResponseMessage };
