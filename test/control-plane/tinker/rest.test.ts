// The Tinker SDK's RestClient and session calls against the real server and
// worker: sessions and what they created, samplers, training runs, the audit
// log, usage by hour (counted exactly), session traces, unload_model; and the
// tenancy walk: every route answers another team's id exactly like a missing one.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "../harness.ts";
import { bindTinker, createModel, createSession, fwdBwdProto, keyOf, sftDatum } from "./client.ts";

let cp: ControlPlane;
let team: Team;
let other: Team;
let sessionId = "";
let modelId = "";
let samplerId = "";
const { tinker, result } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("tinker-rest");
  other = await cp.team("tinker-rest-other");
  await cp.startWorker({ WORKER_CAPACITY: "16" });
  sessionId = await createSession(cp, keyOf(team));
  modelId = await createModel(cp, keyOf(team), BASE, sessionId);
}, 60_000);
afterAll(() => cp?.stop());

async function resolved(key: string, path: string, body: Record<string, unknown>) {
  const accepted = await tinker<{ request_id: string; detail?: string }>(key, path, body);
  expect(accepted.status, JSON.stringify(accepted.body)).toBe(200);
  return (await result(key, accepted.body.request_id)).body;
}

describe("Tinker REST: sessions and samplers", () => {
  it("keeps sessions per team, with heartbeats, listing and what each created", async () => {
    const beat = await tinker(keyOf(team), "session_heartbeat", { session_id: sessionId });
    expect(beat.body).toEqual({ type: "session_heartbeat" });
    const missing = await tinker<{ detail: string }>(keyOf(team), "session_heartbeat", {
      session_id: "nope",
    });
    expect(missing.status).toBe(404);
    const created = await tinker<{ sampling_session_id: string }>(keyOf(team), "create_sampling_session", {
      session_id: sessionId,
      sampling_session_seq_id: 3,
      base_model: BASE,
    });
    samplerId = created.body.sampling_session_id;
    expect(samplerId).toBe(`${sessionId}:sample:3`);
    const sampler = await tinker(keyOf(team), `samplers/${encodeURIComponent(samplerId)}`);
    expect(sampler.body).toEqual({ sampler_id: samplerId, base_model: BASE, model_path: null });
    const listed = await tinker<{ sessions: string[] }>(keyOf(team), "sessions?limit=10");
    expect(listed.body.sessions).toContain(sessionId);
    const session = await tinker(keyOf(team), `sessions/${sessionId}?access_scope=owned`);
    expect(session.body).toEqual({ training_run_ids: [modelId], sampler_ids: [samplerId] });
    const project = await tinker(
      keyOf(team),
      `sessions/${sessionId}/project`,
      { project_id: "p1" },
      {
        method: "PUT",
      },
    );
    expect(project.status).toBe(204);
    const mine = await tinker<{ sessions: string[] }>(keyOf(other), "sessions");
    expect(mine.body.sessions).not.toContain(sessionId);
  });

  it("samples through a stored sampling session, resolving its policy at every sample", async () => {
    const sampled = await resolved(keyOf(team), "asample", {
      sampling_session_id: samplerId,
      seq_id: 0,
      num_samples: 1,
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      sampling_params: { max_tokens: 3, seed: 4 },
    });
    expect((sampled as { sequences: unknown[] }).sequences).toHaveLength(1);
  });
});

describe("Tinker sessions: bounded metadata and a quota of live sessions", () => {
  const sessionBody = (user_metadata: unknown) => ({ tags: [], sdk_version: "0.25.0", user_metadata });

  it("refuses user metadata past its bounds on create_session and create_model, naming it, writing nothing", async () => {
    const before = [await cp.t.db.tinkerSession.count(), await cp.t.db.adapter.count()];
    const keys = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"]));
    const cases: [unknown, string][] = [
      [
        { blob: "x".repeat(8 * 1024 * 1024) },
        `user_metadata: is ${8 * 1024 * 1024 + 11} bytes as JSON; at most 16384`,
      ],
      [{ blob: "x".repeat(16 * 1024) }, `user_metadata: is ${16 * 1024 + 11} bytes as JSON; at most 16384`],
      [keys, "user_metadata: has 65 keys; at most 64"],
      [{ ["k".repeat(129)]: "v" }, `user_metadata.${"k".repeat(129)}: `],
    ];
    for (const [metadata, detail] of cases) {
      const session = await tinker<{ detail: string }>(keyOf(team), "create_session", sessionBody(metadata));
      expect(session.status, session.body.detail).toBe(400);
      expect(session.body.detail.startsWith(detail), session.body.detail).toBe(true);
      const model = await tinker<{ detail: string }>(keyOf(team), "create_model", {
        session_id: sessionId,
        base_model: BASE,
        lora_config: { rank: 4 },
        user_metadata: metadata,
      });
      expect(model.status, model.body.detail).toBe(400);
      expect(model.body.detail.startsWith(detail), model.body.detail).toBe(true);
    }
    expect([await cp.t.db.tinkerSession.count(), await cp.t.db.adapter.count()]).toEqual(before);
    const fits = await tinker(
      keyOf(team),
      "create_session",
      sessionBody({ blob: "x".repeat(16 * 1024 - 20) }),
    );
    expect(fits.status).toBe(200);
  });

  it("holds a team's live sessions to maxTinkerSessions exactly under concurrency; an ended one no longer counts", async () => {
    const quota = await cp.team("tinker-session-quota");
    await cp.t.db.team.update({ where: { id: quota.id }, data: { maxTinkerSessions: 3 } });
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        tinker<{ session_id?: string; detail?: string }>(keyOf(quota), "create_session", sessionBody(null)),
      ),
    );
    expect(answers.map((a) => a.status).sort()).toEqual([200, 200, 200, 429, 429, 429, 429, 429]);
    for (const refused of answers.filter((a) => a.status === 429))
      expect(refused.body.detail).toMatch(
        /^quota exceeded: the team has 3 live Tinker sessions \(maxTinkerSessions is 3\)/,
      );
    expect(await cp.t.db.tinkerSession.count({ where: { teamId: quota.id } })).toBe(3);
    // A session unheard of for more than ten minutes has ended: its place is free.
    const [first, second] = answers.flatMap((a) => (a.body.session_id ? [a.body.session_id] : []));
    const end = (id: string | undefined) =>
      cp.t.db.tinkerSession.update({
        where: { id },
        data: { heartbeatAt: new Date(Date.now() - 11 * 60_000) },
      });
    await end(first);
    const next = await tinker(keyOf(quota), "create_session", sessionBody(null));
    expect(next.status).toBe(200);
    // An ended session's heartbeat brings it back only within the quota.
    const full = await tinker<{ detail: string }>(keyOf(quota), "session_heartbeat", { session_id: first });
    expect(full.status).toBe(429);
    await end(second);
    const back = await tinker(keyOf(quota), "session_heartbeat", { session_id: first });
    expect(back.status).toBe(200);
    const live = await cp.t.db.tinkerSession.count({
      where: { teamId: quota.id, heartbeatAt: { gt: new Date(Date.now() - 10 * 60_000) } },
    });
    expect(live).toBe(3);
  });
});

describe("Tinker REST: training runs, usage, audit, traces", () => {
  it("lists training runs with their metadata and newest saved weights", async () => {
    await resolved(keyOf(team), "save_weights", { model_id: modelId, path: "first" });
    const run = await tinker<Record<string, unknown>>(keyOf(team), `training_runs/${modelId}`);
    expect(run.body).toMatchObject({
      training_run_id: modelId,
      base_model: BASE,
      model_owner: team.slug,
      is_lora: true,
      lora_rank: 4,
      user_metadata: { run: "conformance" },
      last_checkpoint: { checkpoint_id: "weights/first", checkpoint_type: "training" },
      last_sampler_checkpoint: null,
    });
    const runs = await tinker<{
      training_runs: { training_run_id: string }[];
      cursor: { total_count: number };
    }>(keyOf(team), "training_runs?limit=5&offset=0&access_scope=owned");
    expect(runs.body.training_runs.map((r) => r.training_run_id)).toContain(modelId);
    expect(runs.body.cursor.total_count).toBe(1);
  });

  it("counts the team's usage by hour exactly: tokens trained, prefilled and sampled, and saves", async () => {
    const hour = new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000);
    const window = `starting_on=${hour.toISOString()}&ending_before=${new Date(hour.getTime() + 3_600_000).toISOString()}`;
    const usage = async () =>
      (
        await tinker<{ data: { event_info: { type: string; token_count?: number; count?: number } }[] }>(
          keyOf(team),
          `billing/usage/events?${window}`,
        )
      ).body.data;
    const sum = (data: Awaited<ReturnType<typeof usage>>, type: string) =>
      data
        .filter((d) => d.event_info.type === type)
        .reduce((n, d) => n + (d.event_info.token_count ?? d.event_info.count ?? 0), 0);
    const before = await usage();
    const fb = await tinker<{ request_id: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: modelId, seq_id: 0, data: [sftDatum([1, 2, 3, 4, 5])] }),
    });
    await result(keyOf(team), fb.body.request_id, true);
    const sampled = (await resolved(keyOf(team), "asample", {
      base_model: BASE,
      num_samples: 2,
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      sampling_params: { max_tokens: 4, seed: 2 },
    })) as { sequences: { tokens: number[] }[] };
    const after = await usage();
    if (Date.now() - hour.getTime() >= 3_600_000) return; // the hour turned between the two reads
    expect(sum(after, "training") - sum(before, "training")).toBe(4);
    expect(sum(after, "sampling_prefill") - sum(before, "sampling_prefill")).toBe(3);
    expect(sum(after, "sampling_sample") - sum(before, "sampling_sample")).toBe(
      sampled.sequences.reduce((n, s) => n + s.tokens.length, 0),
    );
    expect(sum(after, "checkpoint")).toBeGreaterThanOrEqual(1);
    const refused = await tinker<{ detail: string }>(
      keyOf(team),
      `billing/usage/events?starting_on=${hour.toISOString()}&ending_before=${new Date(hour.getTime() + 15 * 86_400_000).toISOString()}`,
    );
    expect(refused.status).toBe(400);
    expect(refused.body.detail).toMatch(/at most 14 days/);
    const unaligned = await tinker<{ detail: string }>(
      keyOf(team),
      `billing/usage/events?starting_on=2026-01-01T00:30:00Z&ending_before=2026-01-01T02:00:00Z`,
    );
    expect(unaligned.body.detail).toMatch(/starting_on must be on a UTC hour boundary/);
  });

  it("exports a session's calls as a trace behind a signed link", async () => {
    const exported = await tinker<{ status: string; url: string }>(
      keyOf(team),
      `sessions/${sessionId}/trace_export`,
    );
    expect(exported.body.status).toBe("ready");
    const trace = (await (await fetch(exported.body.url)).json()) as {
      traceEvents: { name: string; ph: string }[];
    };
    expect(trace.traceEvents.map((e) => e.name)).toEqual(
      expect.arrayContaining(["FORWARD_BACKWARD", "SAVE_STATE"]),
    );
  });

  it("unloads a model after its queued calls: it takes no more training calls, its runs and weights stay", async () => {
    const doomed = await createModel(cp, keyOf(team), BASE, sessionId);
    await resolved(keyOf(team), "save_weights", { model_id: doomed, path: "kept" });
    const unloaded = await resolved(keyOf(team), "unload_model", { model_id: doomed });
    expect(unloaded).toEqual({ type: "unload_model", model_id: doomed });
    const refused = await tinker<{ detail: string }>(keyOf(team), "forward_backward", undefined, {
      protobufBody: fwdBwdProto({ model_id: doomed, seq_id: 0, data: [sftDatum([1, 2, 3])] }),
    });
    expect(refused.status).toBe(404);
    const run = await tinker(keyOf(team), `training_runs/${doomed}`);
    expect(run.status).toBe(200);
    const info = await tinker(keyOf(team), "weights_info", {
      tinker_path: `tinker://${doomed}/weights/kept`,
    });
    expect(info.status).toBe(200);
  });

  it("keeps an audit log per team and UTC day", async () => {
    await tinker(
      keyOf(team),
      `training_runs/${modelId}/checkpoints/weights/first/ttl`,
      { ttl_seconds: 99 },
      {
        method: "PUT",
      },
    );
    const today = await tinker<{ entries: { event: string; model_id: string; purpose: string }[] }>(
      keyOf(team),
      "audit?event_type=all",
    );
    expect(today.body.entries).toContainEqual(
      expect.objectContaining({ event: "checkpoint_ttl_set", model_id: modelId, purpose: "expires in 99 s" }),
    );
    expect((await tinker<{ entries: unknown[] }>(keyOf(other), "audit")).body.entries).toEqual([]);
    expect((await tinker<{ entries: unknown[] }>(keyOf(team), "audit?day=2020-01-01")).body.entries).toEqual(
      [],
    );
    expect((await tinker<{ detail: string }>(keyOf(team), "audit?day=yesterday")).status).toBe(400);
  });
});

describe("Tinker REST: tenancy", () => {
  it("answers another team's session, sampler, run and checkpoint exactly like missing ones", async () => {
    const routes: [string, string, unknown?][] = [
      ["GET", `sessions/${sessionId}`],
      ["GET", `sessions/${sessionId}/trace_export`],
      ["PUT", `sessions/${sessionId}/project`, { project_id: "x" }],
      ["GET", `samplers/${encodeURIComponent(samplerId)}`],
      ["GET", `training_runs/${modelId}`],
      ["GET", `training_runs/${modelId}/checkpoints`],
      ["GET", `training_runs/${modelId}/checkpoints/weights/first/archive`],
      ["POST", `training_runs/${modelId}/checkpoints/weights/first/publish`],
      ["PUT", `training_runs/${modelId}/checkpoints/weights/first/ttl`, { ttl_seconds: 5 }],
      ["DELETE", `training_runs/${modelId}/checkpoints/weights/first`],
    ];
    const ids = [sessionId, encodeURIComponent(samplerId), modelId];
    const blank = (s: string) =>
      ids.reduce((t, id) => t.replaceAll(id, "<id>").replaceAll(decodeURIComponent(id), "<id>"), s);
    for (const [method, path, body] of routes) {
      const theirs = await tinker<{ detail: string }>(keyOf(other), path, body, { method });
      const missing = await tinker<{ detail: string }>(
        keyOf(other),
        ids.reduce((p, id) => p.replace(id, "missing0"), path),
        body,
        {
          method,
        },
      );
      expect(theirs.status, `${method} ${path}`).toBe(404);
      expect(missing.status, `${method} ${path}`).toBe(404);
      expect(blank(theirs.body.detail)).toBe(missing.body.detail.replaceAll("missing0", "<id>"));
    }
    const sample = await tinker(keyOf(other), "asample", {
      sampling_session_id: samplerId,
      prompt: { chunks: [{ type: "encoded_text", tokens: [1] }] },
      sampling_params: { max_tokens: 1 },
    });
    expect(sample.status).toBe(404);
    const inSession = await tinker(keyOf(other), "create_model", { session_id: sessionId, base_model: BASE });
    expect(inSession.status).toBe(404);
  });
});
