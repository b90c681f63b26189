// The Tinker protocol as the official Python SDK speaks it, for conformance
// tests over HTTP: X-API-Key, JSON or protobuf bodies, retrieve_future polled
// again at once after try_again, and the SDK's protobuf shapes.
import { tinkerApiKey } from "@opentinker/protocol";
import { wireMessages } from "../../../apps/web/src/server/tinker/wire.ts";
import type { ControlPlane, Team } from "../harness.ts";

/** A decoded bytes field's own buffer (protobufjs may hand out views of a larger one). */
export const own = (b: Uint8Array | undefined) => Uint8Array.from(b ?? []).buffer;
export const { ForwardBackwardRequest, ForwardBackwardOutputMessage, SampleResponseMessage } = wireMessages;
export const PROTOBUF = "application/x-protobuf";

export interface Answer<T> {
  status: number;
  body: T;
  type: string;
  bytes: Uint8Array;
  /** The content-length header: the SDK takes a 400 without one for a proxy's refusal. */
  length: string | null;
}

/** One Tinker call as the SDK makes it: `X-API-Key`, JSON or protobuf bodies. */
export interface CallOptions {
  method?: string;
  protobufBody?: Uint8Array;
  acceptProtobuf?: boolean;
  /** Extra request headers (e.g. content-encoding). */
  headers?: Record<string, string>;
}

async function tinkerCall<T>(
  cp: ControlPlane,
  key: string | null,
  path: string,
  body?: unknown,
  options: CallOptions = {},
): Promise<Answer<T>> {
  const headers: Record<string, string> = {
    ...(key === null ? {} : { "x-api-key": key }),
    ...options.headers,
  };
  if (options.acceptProtobuf) headers.accept = PROTOBUF;
  let payload: string | Buffer | undefined;
  if (options.protobufBody) {
    headers["content-type"] = PROTOBUF;
    payload = Buffer.from(options.protobufBody);
  } else if (body !== undefined) {
    headers["content-type"] = "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const response = await fetch(`${cp.url}/api/v1/${path}`, {
    method: options.method ?? (payload === undefined ? "GET" : "POST"),
    headers,
    ...(payload === undefined ? {} : { body: payload }),
  });
  const bytes = new Uint8Array(await response.arrayBuffer());
  const type = response.headers.get("content-type") ?? "";
  const parsed = type.startsWith(PROTOBUF) ? null : JSON.parse(Buffer.from(bytes).toString() || "null");
  return {
    status: response.status,
    body: parsed as T,
    type,
    bytes,
    length: response.headers.get("content-length"),
  };
}

export const keyOf = (t: Team) => tinkerApiKey(t.key);

/** Polls retrieve_future as the SDK does (again at once after try_again), up to `polls` times. */
async function tinkerResult<T>(cp: ControlPlane, key: string, requestId: string, acceptProtobuf = false) {
  for (let poll = 0; poll < 20; poll++) {
    const answer = await tinkerCall<T & { type?: string }>(
      cp,
      key,
      "retrieve_future",
      { request_id: requestId },
      { acceptProtobuf },
    );
    if (answer.status !== 200)
      throw new Error(`retrieve_future: ${answer.status} ${JSON.stringify(answer.body)}`);
    if (answer.body?.type !== "try_again") return answer;
  }
  throw new Error(`future ${requestId} still pending`);
}

export const int32Bytes = (values: number[]) => new Uint8Array(new Int32Array(values).buffer);
export const int64Bytes = (values: number[]) => new Uint8Array(new BigInt64Array(values.map(BigInt)).buffer);
export const float32Bytes = (values: number[]) => new Uint8Array(new Float32Array(values).buffer);
export const DTYPE_FLOAT32 = 1;
export const DTYPE_INT64 = 2;

/** A next-token SFT datum of `tokens` as the SDK's protobuf encoder writes it. */
export function sftDatum(tokens: number[]) {
  const targets = tokens.slice(1);
  return {
    model_input: [{ encoded_text: { tokens: int32Bytes(tokens.slice(0, -1)) } }],
    loss_fn_inputs: {
      target_tokens: { dense: int64Bytes(targets), dtype: DTYPE_INT64, shape: [targets.length] },
      weights: { dense: float32Bytes(targets.map(() => 1)), dtype: DTYPE_FLOAT32, shape: [targets.length] },
    },
  };
}

export function fwdBwdProto(fields: {
  model_id: string;
  seq_id: number;
  data: unknown[];
  loss_fn?: string;
  forward_only?: boolean;
  loss_fn_config?: Record<string, number>;
}) {
  const msg = ForwardBackwardRequest.fromObject({ loss_fn: "cross_entropy", ...fields });
  return ForwardBackwardRequest.encode(msg).finish();
}

/** The decoded protobuf ForwardBackwardOutput: metrics and each field's per-datum float32 values. */
export function decodeFwdBwd(bytes: Uint8Array) {
  const out = ForwardBackwardOutputMessage.toObject(ForwardBackwardOutputMessage.decode(bytes), {
    longs: Number,
    defaults: true,
  }) as {
    loss_fn_output_type: string;
    metrics: Record<string, number>;
    loss_fn_outputs: {
      num_datums: number;
      fields: Record<string, { data: Uint8Array; offsets: Uint8Array; dtype: number }>;
    }[];
  };
  const record = out.loss_fn_outputs[0];
  const field = (name: string) => {
    const f = record?.fields[name];
    if (!f) return [];
    const offsets = Array.from(new BigInt64Array(own(f.offsets)), Number);
    const values = new Float32Array(own(f.data));
    return offsets
      .slice(0, -1)
      .map((start, i) => Array.from(values.slice(start / 4, (offsets[i + 1] as number) / 4)));
  };
  return { ...out, numDatums: record?.num_datums ?? 0, field };
}

/** `tinker(key, path, body?, options?)` and `result(key, requestId, protobuf?)` against the control plane `cp()` returns. */
export function bindTinker(cp: () => ControlPlane) {
  return {
    tinker: <T = Record<string, unknown>>(
      key: string | null,
      path: string,
      body?: unknown,
      options?: CallOptions,
    ) => tinkerCall<T>(cp(), key, path, body, options),
    result: <T = Record<string, unknown>>(key: string, requestId: string, acceptProtobuf = false) =>
      tinkerResult<T>(cp(), key, requestId, acceptProtobuf),
  };
}

/** A Tinker session of the key's team, as the SDK creates one first. */
export async function createSession(cp: ControlPlane, key: string): Promise<string> {
  const { tinker } = bindTinker(() => cp);
  const session = await tinker<{ session_id: string }>(key, "create_session", {
    tags: ["test"],
    user_metadata: { purpose: "conformance" },
    sdk_version: "0.25.0",
    type: "create_session",
  });
  if (session.status !== 200) throw new Error(`create_session: ${session.status}`);
  return session.body.session_id;
}

/** A LoRA model of the key's team (rank 4, no unembedding) in a session, once its future resolves. */
export async function createModel(cp: ControlPlane, key: string, base: string, sessionId: string) {
  const { tinker, result } = bindTinker(() => cp);
  const created = await tinker<{ request_id: string; model_id: string }>(key, "create_model", {
    session_id: sessionId,
    model_seq_id: 0,
    base_model: base,
    lora_config: { rank: 4, train_unembed: false },
    user_metadata: { run: "conformance" },
    type: "create_model",
  });
  if (created.status !== 200)
    throw new Error(`create_model: ${created.status} ${JSON.stringify(created.body)}`);
  const done = await result<{ model_id: string; type: string }>(key, created.body.request_id);
  if (done.body.model_id !== created.body.model_id)
    throw new Error("create_model: the future names another model");
  return created.body.model_id;
}
