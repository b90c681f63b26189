// Live job metrics over Socket.IO: only an authenticated team's own jobs can be
// followed; a follower gets the history in the subscribe answer, then each step
// and the final status as workers store them (recordJobStep, finishJob).
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import {
  addMember,
  createAdapter,
  createApiKey,
  createJob,
  createTeam,
  createUser,
  finishJob,
  METRICS_CHANNEL,
  RequestWaiter,
  recordJobStep,
  registerBaseModel,
  registerWorker,
  setUserPassword,
  startJob,
} from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { LocalStore } from "@opentinker/store";
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AccessWatch } from "../../apps/web/src/server/api/access.ts";
import { forgetAuthenticatedKeys } from "../../apps/web/src/server/api/context.ts";
import { createRequestListener } from "../../apps/web/src/server/http.ts";
import { UNAUTHENTICATED_MESSAGE } from "../../apps/web/src/server/realtime/auth.ts";
import type {
  ClientToServerEvents,
  MetricsEvent,
  ServerToClientEvents,
  StatusEvent,
} from "../../apps/web/src/server/realtime/events.ts";
import { attachMetricsRelay, type MetricsRelay } from "../../apps/web/src/server/realtime/metrics-relay.ts";
import { SESSION_SECRET } from "./harness.ts";

type Client = Socket<ServerToClientEvents, ClientToServerEvents>;

let t: TestDatabase;
let server: Server;
let waiter: RequestWaiter;
let relay: MetricsRelay;
let access: AccessWatch;
let url: string;
const clients: Client[] = [];

async function team(slug: string) {
  const row = await createTeam(t.db, { slug, name: slug });
  const { id: keyId, key } = await createApiKey(t.db, row.id, { name: "test" });
  return { id: row.id, key, keyId };
}

async function job(teamId: string, name: string) {
  const base = await t.db.baseModel.findUniqueOrThrow({ where: { name: "tiny" } });
  const adapter = await createAdapter(t.db, teamId, { name, baseModelId: base.id, kind: "LORA", rank: 4 });
  return createJob(t.db, teamId, { adapterId: adapter.id, kind: "RL", config: {} });
}

function client(options: { apiKey?: string; header?: string; cookie?: string } = {}): Client {
  const socket: Client = io(url, {
    auth: options.apiKey ? { apiKey: options.apiKey } : {},
    ...(options.header ? { extraHeaders: { authorization: options.header } } : {}),
    ...(options.cookie ? { extraHeaders: { cookie: options.cookie } } : {}),
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
  });
  clients.push(socket);
  return socket;
}

/** Connects, or rejects with the server's connect_error message. */
function connected(socket: Client): Promise<Client> {
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", (error) => reject(error));
  });
}

/** The first `event` that satisfies `match`, from now on. */
function next<E extends "metrics" | "status">(
  socket: Client,
  event: E,
  match: (payload: Parameters<ServerToClientEvents[E]>[0]) => boolean,
): Promise<Parameters<ServerToClientEvents[E]>[0]> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no matching ${event} event within 10s`)), 10_000);
    const listener = (payload: Parameters<ServerToClientEvents[E]>[0]) => {
      if (!match(payload)) return;
      clearTimeout(timer);
      socket.off(event, listener as never);
      resolve(payload);
    };
    socket.on(event, listener as never);
  });
}

function collect(socket: Client) {
  const seen: (MetricsEvent | StatusEvent)[] = [];
  socket.on("metrics", (e) => seen.push(e));
  socket.on("status", (e) => seen.push(e));
  return seen;
}

beforeAll(async () => {
  t = await createTestDatabase();
  await registerBaseModel(t.db, {
    name: "tiny",
    path: "/nonexistent",
    architecture: "llama",
    vocabSize: 32,
    contextLength: 64,
  });
  waiter = new RequestWaiter(t.db, t.url);
  server = createServer(
    createRequestListener({
      db: t.db,
      waiter,
      sessionSecret: SESSION_SECRET,
      store: new LocalStore(path.join(tmpdir(), "opentinker-realtime-unused")),
    }),
  );
  access = new AccessWatch(t.url);
  await access.start();
  relay = await attachMetricsRelay(server, { db: t.db, url: t.url, sessionSecret: SESSION_SECRET, access });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  for (const socket of clients) socket.disconnect();
  await relay?.close();
  await access?.close();
  await new Promise<void>((resolve) => server?.close(() => resolve()));
  await waiter?.close();
  await t?.drop();
});

describe("realtime authentication", () => {
  it("refuses a connection without an API key, saying what to send", async () => {
    await expect(connected(client())).rejects.toThrow(/API key: connect with auth \{ apiKey/);
  });

  it("refuses an unknown API key", async () => {
    await expect(connected(client({ apiKey: "ot_not-a-key" }))).rejects.toThrow(/unknown or revoked API key/);
  });

  it("accepts an API key in auth or in an Authorization: Bearer header", async () => {
    const { key } = await team("auth");
    await connected(client({ apiKey: key }));
    await connected(client({ header: `Bearer ${key}` }));
  });
});

describe("job rooms", () => {
  it("relays a team's job's steps and status to that team only, after its history", async () => {
    const a = await team("team-a");
    const b = await team("team-b");
    const bJob = await job(b.id, "b-adapter");
    await recordJobStep(t.db, bJob, 0, { "reward/mean": 0.25, loss: 1.5 }, []);

    const intruder = await connected(client({ apiKey: a.key }));
    const intruderSaw = collect(intruder);
    expect(await intruder.emitWithAck("subscribe", { jobId: bJob.id })).toEqual({
      ok: false,
      error: `job ${bJob.id} not found`,
    });
    // A missing job gets the very same answer: other teams' job ids cannot be probed.
    expect(await intruder.emitWithAck("subscribe", { jobId: "no-such-job" })).toEqual({
      ok: false,
      error: "job no-such-job not found",
    });

    const owner = await connected(client({ apiKey: b.key }));
    const ack = await owner.emitWithAck("subscribe", { jobId: bJob.id });
    expect(ack).toEqual({
      ok: true,
      metrics: [
        { step: 0, name: "loss", value: 1.5 },
        { step: 0, name: "reward/mean", value: 0.25 },
      ],
    });

    // A worker taking the job announces it (the page stops waiting for "queued").
    const running = next(owner, "status", () => true);
    const worker = await registerWorker(t.db, { host: "h", pid: 1, capacity: 1 });
    await startJob(t.db, { ...bJob, startedAt: null }, worker.id);
    expect(await running).toEqual({ jobId: bJob.id, status: "RUNNING" });

    const step1 = next(owner, "metrics", (e) => e.step === 1);
    await recordJobStep(t.db, bJob, 1, { "reward/mean": 0.5, loss: 1.25 }, []);
    expect(await step1).toEqual({ jobId: bJob.id, step: 1, values: { "reward/mean": 0.5, loss: 1.25 } });

    const done = next(owner, "status", () => true);
    await finishJob(t.db, bJob, "SUCCEEDED");
    expect(await done).toEqual({ jobId: bJob.id, status: "SUCCEEDED" });

    // Both events reached the owner, so had the intruder been joined it would have them too.
    expect(intruderSaw).toEqual([]);
  });

  it("stops relaying to a socket that unsubscribed", async () => {
    const c = await team("team-c");
    const cJob = await job(c.id, "c-adapter");
    const leaving = await connected(client({ apiKey: c.key }));
    const staying = await connected(client({ apiKey: c.key }));
    const leavingSaw = collect(leaving);
    for (const socket of [leaving, staying])
      expect(await socket.emitWithAck("subscribe", { jobId: cJob.id })).toEqual({ ok: true, metrics: [] });
    expect(await leaving.emitWithAck("unsubscribe", { jobId: cJob.id })).toEqual({ ok: true });

    const step0 = next(staying, "metrics", (e) => e.step === 0);
    await recordJobStep(t.db, cJob, 0, { loss: 2 }, []);
    expect(await step0).toEqual({ jobId: cJob.id, step: 0, values: { loss: 2 } });
    expect(leavingSaw).toEqual([]);
  });

  it("ignores malformed notices and keeps relaying", async () => {
    const d = await team("team-d");
    const dJob = await job(d.id, "d-adapter");
    const owner = await connected(client({ apiKey: d.key }));
    const saw = collect(owner);
    await owner.emitWithAck("subscribe", { jobId: dJob.id });
    for (const payload of [
      "not json",
      JSON.stringify({ jobId: dJob.id }),
      JSON.stringify({ jobId: dJob.id, teamId: d.id, step: -1 }),
    ])
      await t.db.$executeRaw`SELECT pg_notify(${METRICS_CHANNEL}, ${payload})`;

    const step0 = next(owner, "metrics", (e) => e.step === 0);
    await recordJobStep(t.db, dJob, 0, { loss: 3 }, []);
    await step0;
    expect(saw).toEqual([{ jobId: dJob.id, step: 0, values: { loss: 3 } }]);
  });

  it("answers a subscribe without a job id with what to send", async () => {
    const e = await team("team-e");
    const socket = await connected(client({ apiKey: e.key }));
    expect(await socket.emitWithAck("subscribe", {} as { jobId: string })).toEqual({
      ok: false,
      error: "send { jobId: string }",
    });
  });

  it("refuses a NUL byte in a job id by name, and takes a key holding one as unknown", async () => {
    const f = await team("team-nul");
    const socket = await connected(client({ apiKey: f.key }));
    const refusal = { ok: false, error: "jobId: contains a NUL byte (\\u0000), which no text field accepts" };
    expect(await socket.emitWithAck("subscribe", { jobId: "job\u0000" })).toEqual(refusal);
    expect(await socket.emitWithAck("unsubscribe", { jobId: "job\u0000" })).toEqual(refusal);
    await expect(connected(client({ apiKey: `${f.key}\u0000` }))).rejects.toThrow(UNAUTHENTICATED_MESSAGE);
  });
});

/** Resolves when the server drops the socket (not the client itself). */
const dropped = (socket: Client) =>
  new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error("the socket was not dropped within 10s")), 10_000);
    socket.once("disconnect", (reason) => {
      clearTimeout(timer);
      resolve(reason);
    });
  });

describe("revoked access", () => {
  it("drops an open connection when its API key is revoked, by this process or any other", async () => {
    const f = await team("team-f");
    const fJob = await job(f.id, "f-adapter");
    const socket = await connected(client({ apiKey: f.key }));
    expect((await socket.emitWithAck("subscribe", { jobId: fJob.id })).ok).toBe(true);
    const gone = dropped(socket);
    // Revoked straight in the database, as another web process would.
    await t.db.apiKey.update({ where: { id: f.keyId }, data: { revokedAt: new Date() } });
    expect(await gone).toBe("io server disconnect");
    await expect(connected(client({ apiKey: f.key }))).rejects.toThrow(/revoked API key/);
  });

  it("drops a dashboard connection when its user leaves the team or signs out", async () => {
    const g = await team("team-g");
    const user = await createUser(t.db, { email: "grace@example.com", name: "Grace" });
    await setUserPassword(t.db, user.id, "correct horse battery");
    await addMember(t.db, g.id, user.id);
    const signIn = async () => {
      const response = await fetch(`${url}/api/auth/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ email: "grace@example.com", password: "correct horse battery" }),
      });
      return (response.headers.get("set-cookie") ?? "").split(";")[0] as string;
    };
    const cookie = await signIn();
    const leaving = await connected(client({ cookie }));
    const gone = dropped(leaving);
    await t.db.membership.deleteMany({ where: { teamId: g.id, userId: user.id } });
    expect(await gone).toBe("io server disconnect");

    await addMember(t.db, g.id, user.id);
    const second = await signIn();
    const signingOut = await connected(client({ cookie: second }));
    const out = dropped(signingOut);
    await fetch(`${url}/api/auth/sign-out`, {
      method: "POST",
      headers: { "content-type": "application/json", cookie: second },
      body: "{}",
    });
    expect(await out).toBe("io server disconnect");
  });

  it("checks the key again on every subscribe, even if the revocation was never announced", async () => {
    const h = await team("team-h");
    const hJob = await job(h.id, "h-adapter");
    const socket = await connected(client({ apiKey: h.key }));
    await t.db.$executeRaw`ALTER TABLE "ApiKey" DISABLE TRIGGER "ApiKey_revoked"`;
    try {
      await t.db.apiKey.update({ where: { id: h.keyId }, data: { revokedAt: new Date() } });
      // As after the key cache's lifetime: only the subscribe's own check can refuse now.
      forgetAuthenticatedKeys();
      const answer = await socket.emitWithAck("subscribe", { jobId: hJob.id });
      expect(answer).toEqual({ ok: false, error: expect.stringMatching(/revoked API key/) });
    } finally {
      await t.db.$executeRaw`ALTER TABLE "ApiKey" ENABLE TRIGGER "ApiKey_revoked"`;
    }
  });
});
