// Tinker protocol conformance over HTTP against the real server and a real
// worker: the request and response shapes of the official Python SDK (0.25's
// protobuf forward/backward and results, 0.24's JSON forms), futures with
// try_again, seq_id ordering, the refusals it expects, and tenancy.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "../harness.ts";
import {
  bindTinker,
  createSession,
  createModel as createTinkerModel,
  DTYPE_FLOAT32,
  DTYPE_INT64,
  decodeFwdBwd,
  float32Bytes,
  fwdBwdProto,
  int32Bytes,
  int64Bytes,
  keyOf,
  own,
  PROTOBUF,
  SampleResponseMessage,
  sftDatum,
} from "./client.ts";

let cp: ControlPlane;
let team: Team;
let other: Team;
let sessionId = "";
const { tinker, result } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("tinker");
  other = await cp.team("tinker-other");
  await cp.startWorker();
  sessionId = await createSession(cp, keyOf(team));
}, 60_000);
afterAll(() => cp?.stop());

let modelId = "";
let seq = 0;

const createModel = (key: string) => createTinkerModel(cp, key, BASE, key === keyOf(team) ? sessionId : "");

describe("Tinker protocol: service calls", () => {
  it("answers client/config with the flags the SDK needs, and refuses calls without a tml- key", async () => {
    const config = await tinker(keyOf(team), "client/config", { sdk_version: "0.25.0" });
    expect(config.status).toBe(200);
    expect(config.body).toMatchObject({
      use_pyqwest_transport: false,
      pjwt_auth_enabled: true,
      proto_compress_fwdbwd: true,
    });
    for (const key of [null, team.key, "tml-ot_not-a-key", `tml-${other.key}x`]) {
      const refused = await tinker<{ detail: string }>(key, "client/config", { sdk_version: "0.25.0" });
      expect(refused.status).toBe(401);
      expect(refused.body.detail).toMatch(/X-API-Key: tml-/);
    }
  });

  it("creates sessions, takes heartbeats, lists served models and answers health", async () => {
    const session = await tinker<{ session_id: string }>(keyOf(team), "create_session", {
      tags: [],
      user_metadata: null,
      sdk_version: "0.25.0",
      type: "create_session",
    });
    expect(session.status).toBe(200);
    expect(session.body.session_id).toMatch(/.+/);
    const beat = await tinker(keyOf(team), "session_heartbeat", { session_id: session.body.session_id });
    expect(beat.body).toEqual({ type: "session_heartbeat" });
    const caps = await tinker<{ supported_models: { model_name: string }[] }>(
      keyOf(team),
      "get_server_capabilities",
    );
    expect(caps.body.supported_models.map((m) => m.model_name)).toContain(BASE);
    expect((await tinker(null, "healthz")).body).toEqual({ status: "ok" });
  });

  it("refuses an unknown base model with the list of served ones, creating nothing", async () => {
    const before = await cp.t.db.adapter.count();
    const refused = await tinker<{ detail: string }>(keyOf(team), "create_model", {
      session_id: sessionId,
      model_seq_id: 0,
      base_model: "Qwen/Qwen3-8B",
      lora_config: { rank: 4 },
    });
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(
      new RegExp(`base_model: unknown base model "Qwen/Qwen3-8B"; served: .*${BASE}`),
    );
    expect(await cp.t.db.adapter.count()).toBe(before);
  });

  it("creates a LoRA model whose future resolves to its id, and describes it in get_info", async () => {
    modelId = await createModel(keyOf(team));
    const info = await tinker(keyOf(team), "get_info", { model_id: modelId, type: "get_info" });
    expect(info.body).toMatchObject({ model_id: modelId, is_lora: true, lora_rank: 4, model_name: BASE });
  });
});

describe("Tinker protocol: training", () => {
  it("runs a protobuf forward_backward and answers its future in protobuf", async () => {
    const body = fwdBwdProto({
      model_id: modelId,
      seq_id: ++seq,
      data: [sftDatum([1, 2, 3, 4]), sftDatum([5, 6, 7])],
    });
    const accepted = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: body,
    });
    expect(accepted.status).toBe(200);
    const done = await result(keyOf(team), accepted.body.request_id, true);
    expect(done.type).toBe(PROTOBUF);
    const out = decodeFwdBwd(done.bytes);
    expect(out.numDatums).toBe(2);
    expect(out.field("logprobs").map((d) => d.length)).toEqual([3, 2]);
    expect(out.metrics["loss:sum"]).toBeGreaterThan(0);
  });

  it("answers the 0.24 JSON forms of forward_backward and forward with JSON results", async () => {
    const datum = {
      model_input: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      loss_fn_inputs: {
        target_tokens: { data: [2, 3, 4], dtype: "int64", shape: [3] },
        weights: { data: [1, 1, 1], dtype: "float32", shape: [3] },
      },
    };
    const input = { data: [datum], loss_fn: "cross_entropy" };
    const fb = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", {
      model_id: modelId,
      seq_id: ++seq,
      forward_backward_input: input,
    });
    expect(fb.status).toBe(200);
    const fbDone = await result<{
      loss_fn_outputs: { logprobs: { data: number[]; dtype: string } }[];
      metrics: Record<string, number>;
    }>(keyOf(team), fb.body.request_id);
    expect(fbDone.body.loss_fn_outputs[0]?.logprobs.data).toHaveLength(3);
    expect(fbDone.body.metrics["loss:sum"]).toBeGreaterThan(0);
    const fwd = await tinker<{ request_id: string }>(keyOf(team), "forward", {
      model_id: modelId,
      seq_id: ++seq,
      forward_input: input,
    });
    const fwdDone = await result<{ metrics: Record<string, number> }>(keyOf(team), fwd.body.request_id);
    expect(fwdDone.body.metrics["loss:sum"]).toBeCloseTo(fbDone.body.metrics["loss:sum"] as number, 5);
  });

  it("takes an importance_sampling loss over protobuf (its mask is every target position)", async () => {
    const targets = [2, 3, 4];
    const datum = {
      model_input: [{ encoded_text: { tokens: int32Bytes([1, 2, 3]) } }],
      loss_fn_inputs: {
        target_tokens: { dense: int64Bytes(targets), dtype: DTYPE_INT64, shape: [3] },
        logprobs: { dense: float32Bytes([-1, -1, -1]), dtype: DTYPE_FLOAT32, shape: [3] },
        advantages: { dense: float32Bytes([0, 1, -0.5]), dtype: DTYPE_FLOAT32, shape: [3] },
      },
    };
    const accepted = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({
        model_id: modelId,
        seq_id: ++seq,
        data: [datum],
        loss_fn: "importance_sampling",
      }),
    });
    expect(accepted.status).toBe(200);
    const out = decodeFwdBwd((await result(keyOf(team), accepted.body.request_id, true)).bytes);
    expect(out.field("logprobs")[0]).toHaveLength(3);
    expect(Number.isFinite(out.metrics["loss:sum"])).toBe(true);
  });

  it("takes a ppo loss with Tinker's clip settings, and refuses an inverted range naming it", async () => {
    const datum = {
      model_input: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      loss_fn_inputs: {
        target_tokens: { data: [2, 3, 4], dtype: "int64" },
        logprobs: { data: [-1, -1, -1], dtype: "float32" },
        advantages: { data: [1, 1, 1], dtype: "float32" },
      },
    };
    const call = (config: Record<string, number>) =>
      tinker<{ request_id: string; detail: string }>(keyOf(team), "forward", {
        model_id: modelId,
        forward_input: { data: [datum], loss_fn: "ppo", loss_fn_config: config },
      });
    const ok = await call({ clip_low_threshold: 0.9, clip_high_threshold: 1.1 });
    expect(ok.status).toBe(200);
    const done = await result<{ metrics: Record<string, number> }>(keyOf(team), ok.body.request_id);
    expect(Number.isFinite(done.body.metrics["loss:sum"])).toBe(true);
    const inverted = await call({ clip_low_threshold: 1.5, clip_high_threshold: 1.1 });
    expect(inverted.status).toBe(400);
    expect(inverted.body.detail).toMatch(/clipLowThreshold: 1.5 exceeds clipHighThreshold 1.1/);
  });

  it("takes Tinker's cispo and dro losses, each computed from the logprobs it returns", async () => {
    const old = [-1, -2, -0.5];
    const adv = [1, -0.5, 2];
    const datum = {
      model_input: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      loss_fn_inputs: {
        target_tokens: { data: [2, 3, 4], dtype: "int64" },
        logprobs: { data: old, dtype: "float32" },
        advantages: { data: adv, dtype: "float32" },
      },
    };
    const call = (loss_fn: string, config: Record<string, number>) =>
      tinker<{ request_id: string; detail: string }>(keyOf(team), "forward", {
        model_id: modelId,
        forward_input: { data: [datum], loss_fn, loss_fn_config: config },
      });
    const run = async (loss_fn: string, config: Record<string, number>) => {
      const accepted = await call(loss_fn, config);
      expect(accepted.status).toBe(200);
      const done = await result<{
        loss_fn_outputs: { logprobs: { data: number[] } }[];
        metrics: Record<string, number>;
      }>(keyOf(team), accepted.body.request_id);
      return { lp: done.body.loss_fn_outputs[0]?.logprobs.data ?? [], metrics: done.body.metrics };
    };
    const f32 = (v: number) => Math.fround(v);
    const cispo = await run("cispo", { clip_low_threshold: 0.9, clip_high_threshold: 1.1 });
    expect(cispo.lp).toHaveLength(3);
    const cispoLoss = cispo.lp.reduce((sum, lp, i) => {
      const r = Math.min(Math.max(Math.exp(f32(lp) - (old[i] as number)), 0.9), 1.1);
      return sum - r * f32(lp) * (adv[i] as number);
    }, 0);
    expect(cispo.metrics["loss:sum"]).toBeCloseTo(cispoLoss, 4);
    const dro = await run("dro", { beta: 0.3 });
    const droLoss = dro.lp.reduce((sum, lp, i) => {
      const d = f32(lp) - (old[i] as number);
      return sum - (f32(lp) * (adv[i] as number) - 0.15 * d * d);
    }, 0);
    expect(dro.metrics["loss:sum"]).toBeCloseTo(droLoss, 4);
    const negative = await call("dro", { beta: -1 });
    expect(negative.status).toBe(400);
    expect(negative.body.detail).toMatch(/beta/);
  });

  it("applies optim_step with Adam params", async () => {
    const step = await tinker<{ request_id: string }>(keyOf(team), "optim_step", {
      model_id: modelId,
      seq_id: ++seq,
      adam_params: { learning_rate: 0.01, beta1: 0.9, beta2: 0.95, eps: 1e-12 },
      type: "optim_step",
    });
    expect(step.status).toBe(200);
    const done = await result<{ metrics: Record<string, number> }>(keyOf(team), step.body.request_id);
    expect(done.body.metrics).toBeTypeOf("object");
    expect((await cp.t.db.adapter.findUniqueOrThrow({ where: { id: modelId } })).step).toBe(1);
  });

  it("holds a call that arrives before its predecessor (try_again), then applies both in seq_id order", async () => {
    const later = ++seq + 1;
    const early = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: modelId, seq_id: later, data: [sftDatum([3, 4, 5])] }),
    });
    expect(early.status).toBe(200);
    const pending = await tinker<{ type: string; request_id: string }>(keyOf(team), "retrieve_future", {
      request_id: early.body.request_id,
    });
    expect(pending.body).toMatchObject({ type: "try_again", request_id: early.body.request_id });
    const first = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: modelId, seq_id: seq, data: [sftDatum([1, 2, 3])] }),
    });
    seq = later;
    // A retried send of the same seq_id is the same call.
    const again = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: modelId, seq_id: later, data: [sftDatum([3, 4, 5])] }),
    });
    expect(again.body.request_id).toBe(early.body.request_id);
    await result(keyOf(team), first.body.request_id, true);
    const done = await result(keyOf(team), early.body.request_id, true);
    expect(decodeFwdBwd(done.bytes).numDatums).toBe(1);
    const calls = await cp.t.db.tinkerCall.findMany({
      where: { adapterId: modelId, seqId: { in: [later - 1, later] } },
    });
    const requests = await cp.t.db.request.findMany({
      where: { id: { in: calls.map((c) => c.requestId ?? "") } },
      select: { id: true, seq: true },
    });
    const seqOf = (seqId: number) =>
      requests.find((r) => r.id === calls.find((c) => c.seqId === seqId)?.requestId)?.seq ?? 0;
    expect(seqOf(later - 1)).toBeLessThan(seqOf(later));
  });

  it("lowers the loss over a short SFT loop", async () => {
    const model = await createModel(keyOf(team));
    const data = [sftDatum([1, 2, 3, 4, 5, 6]), sftDatum([6, 5, 4, 3, 2, 1])];
    const losses: number[] = [];
    let s = 0;
    for (let step = 0; step < 8; step++) {
      const fb = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
        protobufBody: fwdBwdProto({ model_id: model, seq_id: ++s, data }),
      });
      const opt = await tinker<{ request_id: string }>(keyOf(team), "optim_step", {
        model_id: model,
        seq_id: ++s,
        adam_params: { learning_rate: 0.05 },
      });
      losses.push(
        decodeFwdBwd((await result(keyOf(team), fb.body.request_id, true)).bytes).metrics[
          "loss:sum"
        ] as number,
      );
      await result(keyOf(team), opt.body.request_id);
    }
    expect(losses.at(-1)).toBeLessThan((losses[0] as number) * 0.9);
  }, 120_000);
});

describe("Tinker protocol: sampling", () => {
  it("saves sampler weights under a tinker:// path and samples them, in protobuf and JSON", async () => {
    const saved = await tinker<{ request_id: string }>(keyOf(team), "save_weights_for_sampler", {
      model_id: modelId,
      seq_id: ++seq,
      path: "step-1",
    });
    expect(saved.status).toBe(200);
    const done = await result<{ path: string }>(keyOf(team), saved.body.request_id);
    expect(done.body.path).toBe(`tinker://${modelId}/sampler_weights/step-1`);
    const session = await tinker<{ sampling_session_id: string }>(keyOf(team), "create_sampling_session", {
      session_id: sessionId,
      sampling_session_seq_id: 0,
      model_path: done.body.path,
    });
    expect(session.status).toBe(200);
    const request = {
      sampling_session_id: session.body.sampling_session_id,
      seq_id: 0,
      num_samples: 2,
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      sampling_params: { max_tokens: 4, temperature: 1, seed: 7 },
    };
    const sampled = await tinker<{ request_id: string }>(keyOf(team), "asample", request);
    expect(sampled.status).toBe(200);
    const proto = await result(keyOf(team), sampled.body.request_id, true);
    expect(proto.type, JSON.stringify(proto.body)).toBe(PROTOBUF);
    const decoded = SampleResponseMessage.toObject(SampleResponseMessage.decode(proto.bytes), {
      defaults: true,
    }) as {
      sequences: { tokens: Uint8Array; logprobs: Uint8Array; stop_reason: number }[];
    };
    expect(decoded.sequences).toHaveLength(2);
    for (const s of decoded.sequences) {
      const tokens = new Int32Array(own(s.tokens));
      expect(tokens.length).toBeGreaterThan(0);
      expect(tokens.length).toBeLessThanOrEqual(4);
      expect(new Float32Array(own(s.logprobs))).toHaveLength(tokens.length);
    }
    const json = await result<{ sequences: { tokens: number[]; stop_reason: string }[] }>(
      keyOf(team),
      sampled.body.request_id,
    );
    expect(json.body.sequences[0]?.tokens).toEqual(
      Array.from(new Int32Array(own(decoded.sequences[0]?.tokens))),
    );
    const base = await tinker<{ request_id: string }>(keyOf(team), "asample", {
      ...request,
      sampling_session_id: undefined,
      base_model: BASE,
    });
    expect(base.status).toBe(200);
  });
});

describe("Tinker protocol: prompt logprobs", () => {
  it("answers prompt logprobs and top-k prompt logprobs in protobuf (the SDK's matrices) and JSON", async () => {
    const prompt = [1, 2, 3, 4];
    const sampled = await tinker<{ request_id: string }>(keyOf(team), "asample", {
      base_model: BASE,
      num_samples: 1,
      prompt: { chunks: [{ type: "encoded_text", tokens: prompt }] },
      sampling_params: { max_tokens: 1, seed: 3 },
      prompt_logprobs: true,
      topk_prompt_logprobs: 3,
    });
    expect(sampled.status).toBe(200);
    const json = await result<{
      prompt_logprobs: (number | null)[];
      topk_prompt_logprobs: ([number, number][] | null)[];
    }>(keyOf(team), sampled.body.request_id);
    expect(json.body.prompt_logprobs).toHaveLength(4);
    expect(json.body.prompt_logprobs[0]).toBeNull();
    expect(json.body.topk_prompt_logprobs[0]).toBeNull();
    for (let i = 1; i < 4; i++) {
      const top = json.body.topk_prompt_logprobs[i] ?? [];
      expect(top).toHaveLength(3);
      expect(top[0]?.[1]).toBeGreaterThanOrEqual(top[1]?.[1] as number);
      expect(json.body.prompt_logprobs[i]).toBeLessThanOrEqual(top[0]?.[1] as number);
    }
    const proto = await result(keyOf(team), sampled.body.request_id, true);
    const decoded = SampleResponseMessage.toObject(SampleResponseMessage.decode(proto.bytes), {
      defaults: true,
    }) as {
      prompt_logprobs: Uint8Array;
      topk_prompt_logprobs: { token_ids: Uint8Array; logprobs: Uint8Array; k: number; prompt_length: number };
    };
    const logprobs = Array.from(new Float32Array(own(decoded.prompt_logprobs)));
    expect(Number.isNaN(logprobs[0])).toBe(true);
    expect(logprobs.slice(1)).toEqual(
      json.body.prompt_logprobs.slice(1).map((v) => Math.fround(v as number)),
    );
    const topk = decoded.topk_prompt_logprobs;
    expect([topk.k, topk.prompt_length]).toEqual([3, 4]);
    const ids = Array.from(new Int32Array(own(topk.token_ids)));
    const lps = Array.from(new Float32Array(own(topk.logprobs)));
    expect(ids.slice(0, 3)).toEqual([0, 0, 0]);
    expect(lps.slice(0, 3)).toEqual([-99999, -99999, -99999]);
    expect(ids.slice(3, 6)).toEqual(json.body.topk_prompt_logprobs[1]?.map(([t]) => t));
  });
});

describe("Tinker protocol: refusals", () => {
  it("answers bad calls with the status and { detail } body the SDK shows, writing no request", async () => {
    const before = await cp.t.db.request.count();
    const cases: [string, unknown, Uint8Array | undefined, number, RegExp][] = [
      ["forward_backward", undefined, new Uint8Array([0xff, 0xff, 0xff]), 400, /malformed protobuf/],
      [
        "forward_backward",
        undefined,
        fwdBwdProto({ model_id: modelId, seq_id: 0, data: [sftDatum([1, 2])], loss_fn: "dpo" }),
        400,
        /loss_fn: "dpo" is not supported/,
      ],
      [
        "forward_backward",
        undefined,
        fwdBwdProto({ model_id: modelId, seq_id: 0, data: [sftDatum([1, 1_000_000])] }),
        400,
        /token id \d+ is out of range/,
      ],
      [
        "optim_step",
        { model_id: modelId, adam_params: { learning_rate: 50 } },
        undefined,
        400,
        /learningRate must be at most/,
      ],
      [
        "asample",
        { base_model: BASE, prompt: { chunks: [] }, sampling_params: {} },
        undefined,
        400,
        /max_tokens: required/,
      ],
      ["retrieve_future", { request_id: "no-such-future" }, undefined, 404, /not found/],
      ["create_model", "{not json", undefined, 400, /malformed JSON/],
    ];
    for (const [path, body, protobufBody, status, detail] of cases) {
      const answer = await tinker<{ detail: string }>(
        keyOf(team),
        path,
        body,
        protobufBody ? { protobufBody } : {},
      );
      expect(answer.status, `${path} ${JSON.stringify(answer.body)}`).toBe(status);
      expect(answer.body.detail).toMatch(detail);
      expect(answer.length).toBe(String(answer.bytes.byteLength));
    }
    expect(await cp.t.db.request.count()).toBe(before);
  });
});

describe("Tinker protocol: tenancy", () => {
  it("answers another team's model, future and weights exactly like missing ones", async () => {
    const key = keyOf(other);
    const pairs: [string, unknown, unknown][] = [
      ["get_info", { model_id: modelId }, { model_id: "no-such-model" }],
      ["optim_step", { model_id: modelId, adam_params: {} }, { model_id: "no-such-model", adam_params: {} }],
      [
        "create_sampling_session",
        { model_path: `tinker://${modelId}/sampler_weights/step-1` },
        { model_path: "tinker://no-such-model/sampler_weights/step-1" },
      ],
    ];
    for (const [path, theirs, missing] of pairs) {
      const a = await tinker<{ detail: string }>(key, path, theirs);
      const b = await tinker<{ detail: string }>(key, path, missing);
      expect(a.status, path).toBe(404);
      expect(b.status, path).toBe(404);
      expect(a.body.detail.replace(modelId, "<id>")).toBe(b.body.detail.replace("no-such-model", "<id>"));
    }
    const theirRequest = await cp.t.db.request.findFirstOrThrow({ where: { adapterId: modelId } });
    const a = await tinker<{ detail: string }>(key, "retrieve_future", { request_id: theirRequest.id });
    const b = await tinker<{ detail: string }>(key, "retrieve_future", { request_id: "no-such-future" });
    expect([a.status, b.status]).toEqual([404, 404]);
    expect(a.body.detail.replace(theirRequest.id, "<id>")).toBe(
      b.body.detail.replace("no-such-future", "<id>"),
    );
    const fb = await tinker<{ detail: string }>(key, "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: modelId, seq_id: 99, data: [sftDatum([1, 2, 3])] }),
    });
    expect(fb.status).toBe(404);
  });
});
