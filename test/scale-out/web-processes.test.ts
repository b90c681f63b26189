// Two real web processes over one database: a client connected to one
// receives the job events relayed by the other (Socket.IO's Postgres adapter),
// the relay moves to the survivor when its process dies, and a key revoked
// through one process stops working on the other at once.
import {
  createAdapter,
  createApiKey,
  createJob,
  createTeam,
  recordJobStep,
  registerBaseModel,
} from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { io, type Socket } from "socket.io-client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type {
  ClientToServerEvents,
  MetricsEvent,
  ServerToClientEvents,
} from "../../apps/web/src/server/realtime/events.ts";
import { kill, type Service, startService, tsx, WEB_PROCESS } from "./processes.ts";

type Client = Socket<ServerToClientEvents, ClientToServerEvents>;

const SESSION_SECRET = "scale-out-tests-session-secret-0123456789";
let t: TestDatabase;
const webs: Service[] = [];
const clients: Client[] = [];

function startWeb(name: string): Promise<Service> {
  return startService(
    name,
    tsx(WEB_PROCESS),
    {
      ...process.env,
      DATABASE_URL: t.url,
      OPENTINKER_SESSION_SECRET: SESSION_SECRET,
      PORT: "0",
      OPENTINKER_DRAIN_MS: "1000",
    },
    /^web: listening on (\S+)$/,
  ).then((web) => {
    webs.push(web);
    return web;
  });
}

function connect(url: string, apiKey: string): Promise<Client> {
  const socket: Client = io(url, {
    auth: { apiKey },
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
  });
  clients.push(socket);
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

function nextStep(socket: Client, step: number): Promise<MetricsEvent> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`step ${step} did not arrive within 15 s`)), 15_000);
    socket.on("metrics", (event) => {
      if (event.step !== step) return;
      clearTimeout(timer);
      resolve(event);
    });
  });
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
});

afterAll(async () => {
  for (const socket of clients) socket.disconnect();
  await Promise.all(webs.map((web) => kill(web)));
  await t?.drop();
});

describe("two web processes", () => {
  it("a client on one receives the metrics the other relays; the survivor takes over the relay", async () => {
    const team = await createTeam(t.db, { slug: "scale", name: "scale" });
    const { key } = await createApiKey(t.db, team.id, { name: "k" });
    const base = await t.db.baseModel.findUniqueOrThrow({ where: { name: "tiny" } });
    const adapter = await createAdapter(t.db, team.id, {
      name: "a",
      baseModelId: base.id,
      kind: "LORA",
      rank: 4,
    });
    const job = await createJob(t.db, team.id, { adapterId: adapter.id, kind: "RL", config: {} });

    // The first process up relays for both.
    const first = await startWeb("web-1");
    await first.line(/^web: relaying job events for every web process$/);
    const second = await startWeb("web-2");
    const client = await connect(second.ready, key);
    expect(await client.emitWithAck("subscribe", { jobId: job.id })).toEqual({ ok: true, metrics: [] });

    const step0 = nextStep(client, 0);
    await recordJobStep(t.db, job, 0, { "reward/mean": 0.5 }, []);
    expect(await step0).toEqual({ jobId: job.id, step: 0, values: { "reward/mean": 0.5 } });
    expect(second.output).not.toContain("web: relaying job events for every web process");

    // The relaying process dies: the survivor takes the relay over, and steps keep coming.
    await kill(first);
    const step1 = nextStep(client, 1);
    await recordJobStep(t.db, job, 1, { "reward/mean": 0.75 }, []);
    expect(await step1).toEqual({ jobId: job.id, step: 1, values: { "reward/mean": 0.75 } });
    await second.line(/^web: relaying job events for every web process$/, 10_000);
  }, 120_000);

  it("a key revoked through one process is refused by the other at once, and its sockets there are dropped", async () => {
    const [web2] = webs.slice(-1) as [Service];
    const web3 = await startWeb("web-3");
    const team = await createTeam(t.db, { slug: "revoke", name: "revoke" });
    const admin = await createApiKey(t.db, team.id, { name: "admin" });
    const doomed = await createApiKey(t.db, team.id, { name: "doomed" });
    const call = (url: string, key: string, method = "GET", route = "/v1/adapters") =>
      fetch(`${url}/api${route}`, { method, headers: { authorization: `Bearer ${key}` } });
    // Authenticated (and so remembered) by process 3.
    expect((await call(web3.ready, doomed.key)).status).toBe(200);
    const socket = await connect(web3.ready, doomed.key);
    const dropped = new Promise<string>((resolve) => socket.once("disconnect", resolve));
    expect((await call(web2.ready, admin.key, "DELETE", `/v1/api-keys/${doomed.id}`)).status).toBe(200);
    expect(await dropped).toBe("io server disconnect");
    expect((await call(web3.ready, doomed.key)).status).toBe(401);
  }, 60_000);
});
