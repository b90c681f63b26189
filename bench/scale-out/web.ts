// Two web processes against one. Per round, interleaved: clients send their
// calls to web process A alone while B is stopped ("one"), then with B started
// the same calls spread over A and B ("two"), so the second process's own cost
// (its LISTENs, the Socket.IO adapter's heartbeats, a second connection pool)
// shows in the round trip. And a job event's latency from the worker's NOTIFY
// to a client on the relaying process against one on the other process (the
// extra hop through the Postgres adapter).
import { createJob, recordJobStep } from "@opentinker/db";
import { io, type Socket } from "socket.io-client";
import type {
  ClientToServerEvents,
  ServerToClientEvents,
} from "../../apps/web/src/server/realtime/events.ts";
import { median, pairedRatio } from "../../packages/engine/bench/timing.ts";
import { processCpuMs } from "../control-plane/cpu.ts";
import type { BenchServer } from "../control-plane/postgres.ts";
import { epochMs, latency, loops, progress, round, sleep, timed } from "../control-plane/stats.ts";
import { Teardown } from "../control-plane/teardown.ts";
import { BASE, Cluster } from "./cluster.ts";

export interface WebOptions {
  rounds: number;
  clients: number;
  perClient: number;
  events: number;
}

type Client = Socket<ServerToClientEvents, ClientToServerEvents>;

const SAMPLE = {
  policy: { baseModel: BASE },
  prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3, 4, 5, 6, 7, 8] }] },
  params: { maxTokens: 8, seed: 1 },
};

function connect(url: string, apiKey: string, teardown: Teardown): Promise<Client> {
  const socket: Client = io(url, {
    auth: { apiKey },
    transports: ["websocket"],
    reconnection: false,
    forceNew: true,
  });
  teardown.defer("disconnect a realtime client", async () => socket.disconnect());
  return new Promise((resolve, reject) => {
    socket.once("connect", () => resolve(socket));
    socket.once("connect_error", reject);
  });
}

export async function benchWeb(server: BenchServer, options: WebOptions, teardown: Teardown) {
  const cluster = await Cluster.start(server, teardown, {});
  const webA = await cluster.startWeb();
  const a = webA.ready;
  await cluster.startWorkerHost();
  const cpu = (pids: number[]) => pids.reduce((sum, pid) => sum + (processCpuMs(pid) ?? Number.NaN), 0);
  const load = async (webs: { url: string; pid: number }[]) => {
    const cpuBefore = cpu(webs.map((w) => w.pid));
    const t0 = performance.now();
    const times = await loops(options.clients, options.perClient, async (client) => {
      const web = webs[client % webs.length] as { url: string };
      return timed(() => cluster.mustCall(web.url, "/v1/sampling/sample", SAMPLE));
    });
    const wallMs = performance.now() - t0;
    const calls = options.clients * options.perClient;
    return {
      times,
      callsPerSecond: (calls / wallMs) * 1000,
      webCpuMsPerCall: (cpu(webs.map((w) => w.pid)) - cpuBefore) / calls,
    };
  };
  const onlyA = [{ url: a, pid: webA.pid }];
  progress("web: warm-up");
  await load(onlyA);
  const rounds: { one: number[]; two: number[] } = { one: [], two: [] };
  const all: { one: number[]; two: number[] } = { one: [], two: [] };
  const rates: { one: number[]; two: number[] } = { one: [], two: [] };
  const webCpu: { one: number[]; two: number[] } = { one: [], two: [] };
  let relay: { local: number[]; acrossProcesses: number[] } = { local: [], acrossProcesses: [] };
  for (let r = 0; r < options.rounds; r++) {
    progress(`web: round ${r + 1}/${options.rounds}: one web process`);
    const one = await load(onlyA);
    progress(`web: round ${r + 1}/${options.rounds}: two web processes`);
    const withB = new Teardown();
    try {
      const webB = await cluster.startWeb(withB);
      const b = webB.ready;
      const both = [...onlyA, { url: b, pid: webB.pid }];
      await load(both); // B's first calls (its caches, its pool) are not the steady state
      const two = await load(both);
      for (const [side, run] of [
        ["one", one],
        ["two", two],
      ] as const) {
        all[side].push(...run.times);
        rounds[side].push(median(run.times));
        rates[side].push(run.callsPerSecond);
        webCpu[side].push(run.webCpuMsPerCall);
      }
      if (r === options.rounds - 1) relay = await relayLatency(cluster, a, b, options.events, withB);
    } finally {
      await withB.run();
    }
  }
  return {
    clients: options.clients,
    callsPerRound: options.clients * options.perClient,
    call: "POST /api/v1/sampling/sample (base model, 8-token prompt, 8 tokens) with waitMs",
    roundTripMs: { one: latency(all.one), two: latency(all.two) },
    ratioTwoOverOne: round(pairedRatio(rounds.two, rounds.one)),
    callsPerSecond: { one: round(median(rates.one)), two: round(median(rates.two)) },
    /** CPU of the web processes (both, on the "two" side) per call: what sizes a web process. */
    webCpuMsPerCall: { one: round(median(webCpu.one)), two: round(median(webCpu.two)) },
    jobEventLatencyMs: {
      relayingProcess: latency(relay.local),
      otherProcess: latency(relay.acrossProcesses),
    },
  };
}

/** NOTIFY (a job step stored, as a worker does) to the event at a client of each process. */
async function relayLatency(cluster: Cluster, a: string, b: string, events: number, teardown: Teardown) {
  const adapter = (await cluster.post<{ id: string }>(a, "/v1/adapters", { name: "relay", baseModel: BASE }))
    .body;
  const job = await createJob(cluster.db, cluster.teamId, { adapterId: adapter.id, kind: "RL", config: {} });
  const local = await connect(a, cluster.key, teardown);
  const other = await connect(b, cluster.key, teardown);
  for (const socket of [local, other]) await socket.emitWithAck("subscribe", { jobId: job.id });
  const seen = { local: [] as number[], acrossProcesses: [] as number[] };
  for (let step = 0; step < events; step++) {
    const arrivals = [local, other].map(
      (socket) =>
        new Promise<number>((resolve) => {
          const on = (event: { step: number }) => {
            if (event.step !== step) return;
            socket.off("metrics", on);
            resolve(epochMs());
          };
          socket.on("metrics", on);
        }),
    );
    const sent = epochMs();
    await recordJobStep(cluster.db, job, step, { "reward/mean": step }, []);
    const [atLocal, atOther] = await Promise.all(arrivals);
    seen.local.push((atLocal as number) - sent);
    seen.acrossProcesses.push((atOther as number) - sent);
    await sleep(20);
  }
  return seen;
}
