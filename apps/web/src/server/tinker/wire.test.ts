import { describe, expect, it } from "vitest";
import { parseTinkerModelAliases, resolveBaseModelName, servedNames } from "./model-names.ts";
import {
  decodeForwardBackward,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  MAX_TENSOR_VALUES,
  type TensorLimits,
  WireError,
  wireMessages,
} from "./wire.ts";

/** A decoded bytes field's own buffer (protobufjs may hand out views of a larger one). */
const own = (b: Uint8Array | undefined) => Uint8Array.from(b ?? []).buffer;
const { ForwardBackwardRequest, ForwardBackwardOutputMessage, SampleResponseMessage } = wireMessages;
const bytes = (array: Int32Array | Float32Array | BigInt64Array) => new Uint8Array(array.buffer);

const request = (fields: Record<string, unknown>) =>
  ForwardBackwardRequest.encode(ForwardBackwardRequest.fromObject(fields)).finish();

/** A model with a 64-position context, as the web process would look it up. */
const LIMITS: TensorLimits = { maxValues: 64, source: "one per position of tiny's context" };
const decode = (bytes: Uint8Array, limits = LIMITS) => decodeForwardBackward(bytes, () => limits);

/** A body whose one datum's `weights` is the given tensor. */
const withWeights = (weights: Record<string, unknown>) =>
  request({
    model_id: "m",
    loss_fn: "cross_entropy",
    data: [
      {
        model_input: [{ encoded_text: { tokens: bytes(new Int32Array([5])) } }],
        loss_fn_inputs: { weights },
      },
    ],
  });

/** A ~100-byte CSR tensor of shape [1, cols] with one stored value. */
const sparse = (cols: number) => ({
  sparse_csr: {
    values: bytes(new Float32Array([1])),
    crow_indices: bytes(new BigInt64Array([0n, 1n])),
    col_indices: bytes(new BigInt64Array([0n])),
  },
  dtype: 1,
  shape: [1, cols],
});

describe("the Tinker protobuf codec", () => {
  it("decodes a forward/backward request to the JSON form's shapes, dense and sparse", async () => {
    const decoded = await decode(
      request({
        model_id: "m",
        seq_id: 3,
        loss_fn: "cross_entropy",
        forward_only: true,
        data: [
          {
            model_input: [{ encoded_text: { tokens: bytes(new Int32Array([5, 6, 7])) } }],
            loss_fn_inputs: {
              target_tokens: { dense: bytes(new BigInt64Array([6n, 7n, 8n])), dtype: 2, shape: [3] },
              // [[0, 2, 0]] as CSR: one row, one value 2 at column 1.
              weights: {
                sparse_csr: {
                  values: bytes(new Float32Array([2])),
                  crow_indices: bytes(new BigInt64Array([0n, 1n])),
                  col_indices: bytes(new BigInt64Array([1n])),
                },
                dtype: 1,
                shape: [1, 3],
              },
            },
          },
        ],
      }),
    );
    expect(decoded.forward_only).toBe(true);
    expect(decoded.seq_id).toBe(3);
    const datum = decoded.forward_backward_input.data[0];
    expect(datum?.model_input.chunks).toEqual([{ type: "encoded_text", tokens: [5, 6, 7] }]);
    expect(datum?.loss_fn_inputs.target_tokens).toEqual({ dtype: "int64", data: [6, 7, 8], shape: [3] });
    expect(datum?.loss_fn_inputs.weights).toEqual({ dtype: "float32", data: [0, 2, 0], shape: [1, 3] });
  });

  it("treats seq_id 0 as no seq_id, and refuses ragged bytes and garbage with a WireError", async () => {
    expect((await decode(request({ model_id: "m", loss_fn: "cross_entropy" }))).seq_id).toBeUndefined();
    const ragged = request({
      model_id: "m",
      data: [{ model_input: [{ encoded_text: { tokens: new Uint8Array([1, 2, 3]) } }] }],
    });
    await expect(decode(ragged)).rejects.toThrow(/3 bytes is not a whole number of 4-byte values/);
    await expect(decode(new Uint8Array([0xff, 0xff]))).rejects.toThrow(WireError);
  });

  it("refuses a declared shape past the model's context before expanding it, naming the field", async () => {
    const field = "forward_backward_input.data.0.loss_fn_inputs.weights";
    for (const cols of [2 ** 40, 2 ** 32, 8 * 1024 * 1024, 65]) {
      const body = withWeights(sparse(cols));
      expect(body.byteLength).toBeLessThan(200);
      await expect(decode(body)).rejects.toThrow(
        `${field}: shape [1, ${cols}] declares ${cols} values; that exceeds the 64 a loss input may hold (one per position of tiny's context)`,
      );
    }
    // Dense tensors are held to the same bound, and a shape at the bound decodes.
    const dense = { dense: bytes(new Float32Array([1])), dtype: 1, shape: [1, 2 ** 40] };
    await expect(decode(withWeights(dense))).rejects.toThrow(`${field}: shape [1, 1099511627776] declares`);
    const full = await decode(withWeights(sparse(64)));
    expect(full.forward_backward_input.data[0]?.loss_fn_inputs.weights?.data).toHaveLength(64);
  });

  it("holds a body naming no known model to the absolute cap, and refuses malformed shapes and row pointers", async () => {
    const unknown: TensorLimits = { maxValues: Number.MAX_SAFE_INTEGER, source: "a huge model" };
    await expect(decode(withWeights(sparse(MAX_TENSOR_VALUES + 1)), unknown)).rejects.toThrow(
      `exceeds the ${MAX_TENSOR_VALUES} a loss input may hold (the service's limit for any tensor)`,
    );
    const cases: [Record<string, unknown>, RegExp][] = [
      [{ ...sparse(4), shape: [1, 1, 1, 1, 1] }, /has 5 dimensions; at most 4/],
      [{ ...sparse(4), shape: [-1, 4] }, /has a dimension that is negative or too large/],
      [{ ...sparse(4), shape: [4] }, /a sparse tensor needs a 2-D shape/],
      [
        {
          ...sparse(4),
          sparse_csr: { ...sparse(4).sparse_csr, crow_indices: bytes(new BigInt64Array([0n, 2n])) },
        },
        /row pointers must rise from 0 to the 1 stored values/,
      ],
      [
        {
          ...sparse(4),
          sparse_csr: { ...sparse(4).sparse_csr, col_indices: bytes(new BigInt64Array([9n])) },
        },
        /sparse index 0 is out of range/,
      ],
    ];
    for (const [tensor, message] of cases) await expect(decode(withWeights(tensor))).rejects.toThrow(message);
  });

  it("refuses a NUL byte in any string of the message, naming it, before the model is looked up", async () => {
    let lookedUp = false;
    const look = () => {
      lookedUp = true;
      return LIMITS;
    };
    const bodies: [Uint8Array, string][] = [
      [request({ model_id: "m\u0000", loss_fn: "cross_entropy" }), "model_id"],
      [request({ model_id: "m", loss_fn: "cross\u0000" }), "loss_fn"],
    ];
    for (const [body, field] of bodies)
      await expect(decodeForwardBackward(body, look)).rejects.toThrow(`${field}: contains a NUL byte`);
    const key = request({
      model_id: "m",
      data: [{ model_input: [], loss_fn_inputs: { "weights\u0000": sparse(4) } }],
    });
    await expect(decodeForwardBackward(key, look)).rejects.toThrow(
      "data.0.loss_fn_inputs.weights\\u0000: contains a NUL byte",
    );
    expect(lookedUp).toBe(false);
  });

  it("encodes forward/backward outputs as one batched record with per-datum offsets", () => {
    const encoded = encodeForwardBackwardOutput({
      lossFnOutputs: [
        { logprobs: { dtype: "float32", data: [-1, -2] } },
        { logprobs: { dtype: "float32", data: [-3] } },
      ],
      metrics: { "loss:sum": 6 },
    });
    const out = ForwardBackwardOutputMessage.toObject(ForwardBackwardOutputMessage.decode(encoded), {
      longs: Number,
    }) as {
      metrics: Record<string, number>;
      loss_fn_outputs: {
        num_datums: number;
        fields: Record<string, { data: Uint8Array; offsets: Uint8Array }>;
      }[];
    };
    expect(out.metrics).toEqual({ "loss:sum": 6 });
    const record = out.loss_fn_outputs[0];
    expect(record?.num_datums).toBe(2);
    const field = record?.fields.logprobs;
    expect(Array.from(new BigInt64Array(own(field?.offsets)))).toEqual([0n, 8n, 12n]);
    expect(Array.from(new Float32Array(own(field?.data)))).toEqual([-1, -2, -3]);
  });

  it("encodes sampling results with int32 tokens, float32 logprobs and NaN for a missing prompt logprob", () => {
    const encoded = encodeSampleResponse({
      sequences: [{ tokens: [4, 5], logprobs: [-0.5, -0.25], stopReason: "length" }],
      promptLogprobs: [null, -1],
    });
    const out = SampleResponseMessage.toObject(SampleResponseMessage.decode(encoded)) as {
      sequences: { tokens: Uint8Array; logprobs: Uint8Array; stop_reason: number }[];
      prompt_logprobs: Uint8Array;
    };
    const seq = out.sequences[0];
    expect(Array.from(new Int32Array(own(seq?.tokens)))).toEqual([4, 5]);
    expect(Array.from(new Float32Array(own(seq?.logprobs)))).toEqual([-0.5, -0.25]);
    expect(seq?.stop_reason).toBe(1);
    const prompt = Array.from(new Float32Array(own(out.prompt_logprobs)));
    expect(Number.isNaN(prompt[0])).toBe(true);
    expect(prompt[1]).toBe(-1);
  });
});

describe("Tinker base-model names", () => {
  const aliases = parseTinkerModelAliases('{"Qwen/Qwen3-8B": "text-tiny", "Gone/Model": "retired"}');
  it("map through the configured aliases to served models, and list only served ones", () => {
    expect(resolveBaseModelName("Qwen/Qwen3-8B", aliases, ["text-tiny"])).toBe("text-tiny");
    expect(resolveBaseModelName("text-tiny", aliases, ["text-tiny"])).toBe("text-tiny");
    expect(resolveBaseModelName("Gone/Model", aliases, ["text-tiny"])).toBeNull();
    expect(servedNames(aliases, ["text-tiny"])).toEqual(["Qwen/Qwen3-8B", "text-tiny"]);
  });

  it("refuse a setting that is not a JSON object of names", () => {
    expect(parseTinkerModelAliases("")).toEqual({});
    expect(() => parseTinkerModelAliases("[1]")).toThrow(/OPENTINKER_TINKER_MODELS/);
    expect(() => parseTinkerModelAliases("{")).toThrow(/not JSON/);
  });
});
