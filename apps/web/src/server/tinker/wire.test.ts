import { describe, expect, it } from "vitest";
import { parseTinkerModelAliases, resolveBaseModelName, servedNames } from "./model-names.ts";
import {
  decodeForwardBackward,
  encodeForwardBackwardOutput,
  encodeSampleResponse,
  WireError,
  wireMessages,
} from "./wire.ts";

/** A decoded bytes field's own buffer (protobufjs may hand out views of a larger one). */
const own = (b: Uint8Array | undefined) => Uint8Array.from(b ?? []).buffer;
const { ForwardBackwardRequest, ForwardBackwardOutputMessage, SampleResponseMessage } = wireMessages;
const bytes = (array: Int32Array | Float32Array | BigInt64Array) => new Uint8Array(array.buffer);

const request = (fields: Record<string, unknown>) =>
  ForwardBackwardRequest.encode(ForwardBackwardRequest.fromObject(fields)).finish();

describe("the Tinker protobuf codec", () => {
  it("decodes a forward/backward request to the JSON form's shapes, dense and sparse", () => {
    const decoded = decodeForwardBackward(
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

  it("treats seq_id 0 as no seq_id, and refuses ragged bytes and garbage with a WireError", () => {
    expect(
      decodeForwardBackward(request({ model_id: "m", loss_fn: "cross_entropy" })).seq_id,
    ).toBeUndefined();
    const ragged = request({
      model_id: "m",
      data: [{ model_input: [{ encoded_text: { tokens: new Uint8Array([1, 2, 3]) } }] }],
    });
    expect(() => decodeForwardBackward(ragged)).toThrow(/3 bytes is not a whole number of 4-byte values/);
    expect(() => decodeForwardBackward(new Uint8Array([0xff, 0xff]))).toThrow(WireError);
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
