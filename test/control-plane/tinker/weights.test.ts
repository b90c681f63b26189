// Saved weights over the Tinker protocol, as the SDK's TrainingClient and
// RestClient call them: save_weights / load_weights (with and without the
// optimizer, from another run of the team), weights_info, listing, TTLs,
// deletion, publishing to other teams (read-only) and archive links.
import { extract } from "tar-stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "../harness.ts";
import {
  bindTinker,
  createModel,
  createSession,
  decodeFwdBwd,
  fwdBwdProto,
  keyOf,
  sftDatum,
} from "./client.ts";

let cp: ControlPlane;
let team: Team;
let other: Team;
let sessionId = "";
let modelId = "";
const seqs = new Map<string, number>();
const { tinker, result } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("tinker-weights");
  other = await cp.team("tinker-weights-other");
  await cp.startWorker({ WORKER_CAPACITY: "16" });
  sessionId = await createSession(cp, keyOf(team));
  modelId = await createModel(cp, keyOf(team), BASE, sessionId);
}, 60_000);
afterAll(() => cp?.stop());

const nextSeq = (model: string) => {
  const seq = (seqs.get(model) ?? 0) + 1;
  seqs.set(model, seq);
  return seq;
};

/** A training call of the model in its seq_id order, resolved. */
type Called = { status: number; body: { detail?: string; path?: string; [field: string]: unknown } };

async function call(key: string, path: string, body: Record<string, unknown>): Promise<Called> {
  const accepted = await tinker<{ request_id: string; detail?: string }>(key, path, {
    ...body,
    seq_id: nextSeq(body.model_id as string),
  });
  if (accepted.status !== 200) return { status: accepted.status, body: { detail: accepted.body.detail } };
  const done = await result<Called["body"]>(key, accepted.body.request_id);
  return { status: done.status, body: done.body };
}

const DATA = [sftDatum([1, 2, 3, 4, 5]), sftDatum([6, 7, 8])];

async function loss(key: string, model: string): Promise<number> {
  const accepted = await tinker<{ request_id: string }>(key, "forward_backward", undefined, {
    protobufBody: fwdBwdProto({ model_id: model, seq_id: nextSeq(model), data: DATA, forward_only: true }),
  });
  return decodeFwdBwd((await result(key, accepted.body.request_id, true)).bytes).metrics[
    "loss:sum"
  ] as number;
}

async function trainStep(key: string, model: string) {
  const fb = await tinker<{ request_id: string }>(key, "forward_backward", undefined, {
    protobufBody: fwdBwdProto({ model_id: model, seq_id: nextSeq(model), data: DATA }),
  });
  await result(key, fb.body.request_id, true);
  await call(key, "optim_step", { model_id: model, adam_params: { learning_rate: 0.05 } });
}

type Listed = { checkpoint_id: string; tinker_path: string; public: boolean; expires_at: string | null };

const listed = async (key: string, model: string) =>
  (await tinker<{ checkpoints: Listed[] }>(key, `training_runs/${model}/checkpoints`)).body.checkpoints;

describe("Tinker weights: save and load", () => {
  it("saves a training checkpoint, refuses its name again unless overwrite, and loads it back exactly", async () => {
    await trainStep(keyOf(team), modelId);
    const saved = await call(keyOf(team), "save_weights", {
      model_id: modelId,
      path: "ckpt-a",
    });
    expect(saved.body).toEqual({ type: "save_weights", path: `tinker://${modelId}/weights/ckpt-a` });
    const again = await call(keyOf(team), "save_weights", { model_id: modelId, path: "ckpt-a" });
    expect(again.status).toBe(409);
    expect(again.body.detail).toMatch(/already has a checkpoint named "ckpt-a"/);
    const atSave = await loss(keyOf(team), modelId);
    await trainStep(keyOf(team), modelId);
    expect(await loss(keyOf(team), modelId)).not.toBeCloseTo(atSave, 6);
    const loaded = await call(keyOf(team), "load_weights", {
      model_id: modelId,
      path: saved.body.path,
      optimizer: true,
    });
    expect(loaded.body).toEqual({ type: "load_weights", path: saved.body.path, model_id: modelId });
    expect(await loss(keyOf(team), modelId)).toBeCloseTo(atSave, 6);
    const overwritten = await call(keyOf(team), "save_weights", {
      model_id: modelId,
      path: "ckpt-a",
      overwrite: true,
    });
    expect(overwritten.status).toBe(200);
    expect(
      (await listed(keyOf(team), modelId)).filter((c) => c.checkpoint_id === "weights/ckpt-a"),
    ).toHaveLength(1);
  });

  it("loads a checkpoint of another run of the team into a new run, weights only or with the optimizer", async () => {
    const atSave = await loss(keyOf(team), modelId);
    const path = `tinker://${modelId}/weights/ckpt-a`;
    const info = await tinker(keyOf(team), "weights_info", { tinker_path: path });
    expect(info.body).toEqual({
      base_model: BASE,
      is_lora: true,
      lora_rank: 4,
      train_unembed: false,
      train_mlp: true,
      train_attn: true,
    });
    for (const optimizer of [false, true]) {
      const fresh = await createModel(cp, keyOf(team), BASE, sessionId);
      const loaded = await call(keyOf(team), "load_weights", { model_id: fresh, path, optimizer });
      expect(loaded.status).toBe(200);
      expect(await loss(keyOf(team), fresh)).toBeCloseTo(atSave, 6);
    }
  });

  it("refuses a sampler path, a malformed path and another team's checkpoint like a missing one", async () => {
    const fresh = await createModel(cp, keyOf(other), BASE, await createSession(cp, keyOf(other)));
    const cases: [Record<string, unknown>, number, RegExp][] = [
      [
        { path: `tinker://${modelId}/sampler_weights/x` },
        400,
        /path: expected tinker:\/\/<model>\/weights\/<name>/,
      ],
      [{ path: "s3://bucket/x" }, 400, /path: expected tinker:\/\//],
      [{ path: `tinker://${modelId}/weights/ckpt-a` }, 404, /not found/],
      [{ path: "tinker://no-such-model/weights/ckpt-a" }, 404, /not found/],
    ];
    for (const [body, status, detail] of cases) {
      const refused = await tinker<{ detail: string }>(keyOf(other), "load_weights", {
        model_id: fresh,
        optimizer: false,
        ...body,
      });
      expect(refused.status, JSON.stringify(body)).toBe(status);
      expect(refused.body.detail).toMatch(detail);
    }
  });
});

describe("Tinker weights: listing, TTL, deletion", () => {
  it("lists a run's training and sampler checkpoints, and every checkpoint of the team with a cursor", async () => {
    const sampler = await call(keyOf(team), "save_weights_for_sampler", {
      model_id: modelId,
      path: "sampler-a",
    });
    expect(sampler.body.path).toBe(`tinker://${modelId}/sampler_weights/sampler-a`);
    const ids = (await listed(keyOf(team), modelId)).map((c) => c.checkpoint_id);
    expect(ids).toEqual(expect.arrayContaining(["weights/ckpt-a", "sampler_weights/sampler-a"]));
    const page = await tinker<{ checkpoints: Listed[]; cursor: { total_count: number; limit: number } }>(
      keyOf(team),
      "checkpoints?limit=1&offset=0",
    );
    expect(page.body.checkpoints).toHaveLength(1);
    expect(page.body.cursor.total_count).toBeGreaterThanOrEqual(2);
    const bad = await tinker<{ detail: string }>(keyOf(team), "checkpoints?limit=ten");
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/limit must be a whole number/);
  });

  it("sets and clears a TTL; an expired checkpoint is gone for every call at once", async () => {
    const ref = `training_runs/${modelId}/checkpoints/weights/ckpt-a/ttl`;
    expect((await tinker(keyOf(team), ref, { ttl_seconds: 3600 }, { method: "PUT" })).status).toBe(204);
    const withTtl = (await listed(keyOf(team), modelId)).find((c) => c.checkpoint_id === "weights/ckpt-a");
    expect(Date.parse(withTtl?.expires_at ?? "")).toBeGreaterThan(Date.now() + 3500_000);
    expect((await tinker(keyOf(team), ref, { ttl_seconds: null }, { method: "PUT" })).status).toBe(204);
    expect(
      (await listed(keyOf(team), modelId)).find((c) => c.checkpoint_id === "weights/ckpt-a")?.expires_at,
    ).toBe(null);
    const zero = await tinker<{ detail: string }>(keyOf(team), ref, { ttl_seconds: 0 }, { method: "PUT" });
    expect(zero.status).toBe(400);
    const short = await call(keyOf(team), "save_weights", {
      model_id: modelId,
      path: "short-lived",
      ttl_seconds: 1,
    });
    expect(short.status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await listed(keyOf(team), modelId)).map((c) => c.checkpoint_id)).not.toContain(
      "weights/short-lived",
    );
    const info = await tinker(keyOf(team), "weights_info", {
      tinker_path: `tinker://${modelId}/weights/short-lived`,
    });
    expect(info.status).toBe(404);
    // A worker then deletes the row and its files.
    const row = await cp.t.db.checkpoint.findFirst({ where: { adapterId: modelId, name: "short-lived" } });
    await expect
      .poll(() => cp.t.db.checkpoint.count({ where: { adapterId: modelId, name: "short-lived" } }), {
        timeout: 20_000,
        interval: 500,
      })
      .toBe(0);
    // Rows go first, then files (nothing listed is ever missing its files).
    const { existsSync } = await import("node:fs");
    if (row) await expect.poll(() => existsSync(row.path), { timeout: 10_000, interval: 200 }).toBe(false);
  }, 40_000);

  it("deletes a checkpoint (its row and files); another team's answers like a missing one", async () => {
    await call(keyOf(team), "save_weights", { model_id: modelId, path: "doomed" });
    const row = await cp.t.db.checkpoint.findFirstOrThrow({ where: { adapterId: modelId, name: "doomed" } });
    const theirs = await tinker<{ detail: string }>(
      keyOf(other),
      `training_runs/${modelId}/checkpoints/weights/doomed`,
      undefined,
      { method: "DELETE" },
    );
    const missing = await tinker<{ detail: string }>(
      keyOf(other),
      `training_runs/${modelId}/checkpoints/weights/no-such`,
      undefined,
      { method: "DELETE" },
    );
    expect([theirs.status, missing.status]).toEqual([404, 404]);
    expect(theirs.body.detail.replace("doomed", "x")).toBe(missing.body.detail.replace("no-such", "x"));
    const deleted = await tinker(
      keyOf(team),
      `training_runs/${modelId}/checkpoints/weights/doomed`,
      undefined,
      {
        method: "DELETE",
      },
    );
    expect(deleted.status).toBe(204);
    expect(await cp.t.db.checkpoint.count({ where: { id: row.id } })).toBe(0);
    const { existsSync } = await import("node:fs");
    expect(existsSync(row.path)).toBe(false);
    const audit = await tinker<{ entries: { event: string; tinker_path: string }[] }>(keyOf(team), "audit");
    expect(audit.body.entries).toContainEqual(
      expect.objectContaining({
        event: "checkpoint_deleted",
        tinker_path: `tinker://${modelId}/weights/doomed`,
      }),
    );
  });
});

/** The member names of a tar. */
async function tarNames(bytes: Uint8Array): Promise<string[]> {
  const names: string[] = [];
  const tar = extract();
  const done = new Promise<void>((resolve, reject) => {
    tar.on("entry", (header, stream, next) => {
      names.push(header.name);
      stream.on("end", next);
      stream.resume();
    });
    tar.on("finish", resolve);
    tar.on("error", reject);
  });
  tar.end(Buffer.from(bytes));
  await done;
  return names.sort();
}

describe("Tinker weights: publishing and archives", () => {
  it("lets other teams read a published checkpoint (info, archive, load) but never change it", async () => {
    const path = `tinker://${modelId}/weights/ckpt-a`;
    const route = `training_runs/${modelId}/checkpoints/weights/ckpt-a`;
    expect((await tinker(keyOf(other), "weights_info", { tinker_path: path })).status).toBe(404);
    expect((await tinker(keyOf(team), `${route}/publish`, undefined, { method: "POST" })).status).toBe(204);
    expect((await listed(keyOf(team), modelId)).find((c) => c.tinker_path === path)?.public).toBe(true);
    expect((await tinker(keyOf(other), "weights_info", { tinker_path: path })).status).toBe(200);
    const link = await tinker<{ url: string }>(keyOf(other), `${route}/archive`);
    expect(link.status).toBe(200);
    const theirs = await createModel(cp, keyOf(other), BASE, await createSession(cp, keyOf(other)));
    const loaded = await call(keyOf(other), "load_weights", { model_id: theirs, path, optimizer: false });
    expect(loaded.status).toBe(200);
    expect(await loss(keyOf(other), theirs)).toBeCloseTo(await loss(keyOf(team), modelId), 6);
    for (const [method, suffix] of [
      ["DELETE", ""],
      ["DELETE", "/publish"],
      ["PUT", "/ttl"],
    ] as const) {
      const refused = await tinker(
        keyOf(other),
        `${route}${suffix}`,
        suffix === "/ttl" ? { ttl_seconds: 5 } : undefined,
        {
          method,
        },
      );
      expect(refused.status, `${method} ${suffix}`).toBe(404);
    }
    expect((await tinker(keyOf(team), `${route}/publish`, undefined, { method: "DELETE" })).status).toBe(204);
    expect((await tinker(keyOf(other), "weights_info", { tinker_path: path })).status).toBe(404);
    // The link outlives neither the object nor the right to read it.
    expect((await fetch(link.body.url)).status).toBe(404);
  });

  it("lets other teams sample published sampler weights until they are unpublished", async () => {
    const path = `tinker://${modelId}/sampler_weights/sampler-a`;
    const sample = () =>
      tinker<{ request_id: string; detail: string }>(keyOf(other), "asample", {
        model_path: path,
        prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
        sampling_params: { max_tokens: 3, seed: 1 },
      });
    expect((await sample()).status).toBe(404);
    const route = `training_runs/${modelId}/checkpoints/sampler_weights/sampler-a/publish`;
    expect((await tinker(keyOf(team), route, undefined, { method: "POST" })).status).toBe(204);
    const sampled = await sample();
    expect(sampled.status).toBe(200);
    const done = await result<{ sequences: { tokens: number[] }[] }>(keyOf(other), sampled.body.request_id);
    expect(done.body.sequences[0]?.tokens.length).toBeGreaterThan(0);
    const request = await cp.t.db.request.findUniqueOrThrow({ where: { id: sampled.body.request_id } });
    expect(request.adapterId).toBe(null);
    expect((await tinker(keyOf(team), route, undefined, { method: "DELETE" })).status).toBe(204);
    await expect.poll(async () => (await sample()).status, { timeout: 10_000 }).toBe(404);
  });

  it("archives saved weights as a tar of their PEFT files behind a signed link that refuses tampering", async () => {
    for (const route of [`weights/ckpt-a`, `sampler_weights/sampler-a`]) {
      const link = await tinker<{ url: string; expires: string }>(
        keyOf(team),
        `training_runs/${modelId}/checkpoints/${route}/archive`,
      );
      expect(Date.parse(link.body.expires)).toBeGreaterThan(Date.now());
      const response = await fetch(link.body.url);
      expect(response.status).toBe(200);
      expect(await tarNames(new Uint8Array(await response.arrayBuffer()))).toEqual([
        "adapter_config.json",
        "adapter_model.safetensors",
        "checkpoint_complete",
      ]);
      const [payload = "", signature = ""] = link.body.url.split("/downloads/")[1]?.split(".") ?? [];
      const base = link.body.url.split("/downloads/")[0];
      const forgedTarget = Buffer.from(
        JSON.stringify({
          ...JSON.parse(Buffer.from(payload, "base64url").toString()),
          expires: Date.now() + 1e9,
        }),
      ).toString("base64url");
      // The first character carries six bits of the signature, so changing it always changes the signature
      // (replacing the last two with "AA" left it as it was when it already ended so: one link in 4,096).
      const altered = `${signature.startsWith("A") ? "B" : "A"}${signature.slice(1)}`;
      for (const tampered of [`${payload}.${altered}`, `${forgedTarget}.${signature}`]) {
        const refused = await fetch(`${base}/downloads/${tampered}`);
        expect(refused.status).toBe(403);
      }
    }
  });
});
