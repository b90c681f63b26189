// Live job metrics for the dashboard, across every web process. Socket.IO's
// Postgres adapter joins the processes' servers: an event emitted to a job's
// room on one process reaches that room's clients on all of them. The workers'
// NOTIFYs on METRICS_CHANNEL are heard by every process, and relayed by one,
// the holder of the relay lease (the first process up; another takes over
// within a second of its death, replaying the notices of the last few seconds,
// which clients key by step). So a client may connect to any process, and each
// step is read from the database once, however many processes there are.
import type { Server as HttpServer } from "node:http";
import { type Db, LeaderLease, listMetrics, METRICS_CHANNEL, PgListener } from "@opentinker/db";
import { createAdapter } from "@socket.io/postgres-adapter";
import pg from "pg";
import { Server } from "socket.io";
import { type AccessWatch, revokes } from "../api/access.ts";
import { resolveSocketCaller, UNAUTHENTICATED_MESSAGE } from "./auth.ts";
import { type ClientToServerEvents, jobRoom, REALTIME_PATH, type ServerToClientEvents } from "./events.ts";
import { handleJobRooms, type RelaySocket, type SocketData } from "./job-rooms.ts";
import { type MetricsNotice, parseMetricsNotice } from "./notices.ts";

type RelayServer = Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;

export interface MetricsRelay {
  /** Whether this process relays the job events for every web process now. */
  readonly relaying: boolean;
  /** Ends every connection and the LISTEN; the HTTP server stays the caller's to close. */
  close(): Promise<void>;
}

/** Where the adapter keeps payloads too large for a NOTIFY (prisma/migrations: socket_io_adapter). */
const ATTACHMENTS_TABLE = "socket_io.attachments";
/** Notices a process that does not relay keeps, replayed if it takes over (the gap a takeover may leave). */
const REPLAY_MS = 5_000;

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** Refuses a connection before it can join any room unless it names a team. */
function authenticate(db: Db, sessionSecret: string) {
  return (socket: RelaySocket, next: (error?: Error) => void) => {
    resolveSocketCaller(db, socket.handshake, sessionSecret).then(
      (caller) => {
        if (!caller) return next(new Error(UNAUTHENTICATED_MESSAGE));
        socket.data.caller = caller;
        next();
      },
      (error: unknown) => {
        console.error(`web: realtime authentication failed: ${messageOf(error)}`);
        next(new Error("authentication failed: internal error"));
      },
    );
  };
}

async function relayNotice(io: RelayServer, db: Db, notice: MetricsNotice): Promise<void> {
  const room = jobRoom(notice.jobId);
  if ("status" in notice)
    return void io.to(room).emit("status", { jobId: notice.jobId, status: notice.status });
  const rows = await listMetrics(db, notice.teamId, notice.jobId, notice.step);
  const values = Object.fromEntries(rows.filter((r) => r.step === notice.step).map((r) => [r.name, r.value]));
  io.to(room).emit("metrics", { jobId: notice.jobId, step: notice.step, values });
}

/** Serves `/socket.io` on the web process's HTTP server; resolves once the LISTEN is in place. */
export async function attachMetricsRelay(
  server: HttpServer,
  deps: { db: Db; url: string; sessionSecret: string; access: AccessWatch; leaseRetryMs?: number },
): Promise<MetricsRelay> {
  // One connection LISTENs for the other processes; the rest publish.
  const pool = new pg.Pool({ connectionString: deps.url, max: 3 });
  pool.on("error", (error) => console.error(`web: realtime adapter connection failed: ${messageOf(error)}`));
  const io: RelayServer = new Server(server, { path: REALTIME_PATH, serveClient: false });
  io.adapter(
    createAdapter(pool, {
      tableName: ATTACHMENTS_TABLE,
      errorHandler: (error) => console.error(`web: realtime adapter: ${messageOf(error)}`),
    }),
  );
  io.use(authenticate(deps.db, deps.sessionSecret));
  io.on("connection", (socket) => handleJobRooms(deps.db, deps.sessionSecret, socket));
  // A revoked key or ended session loses its open connections at once, not at its next subscribe.
  const stopWatching = deps.access.onRevoked((revocation) => {
    for (const socket of io.of("/").sockets.values())
      if (revokes(revocation, socket.data.caller)) socket.disconnect(true);
  });
  // Notices are relayed one at a time, so steps reach clients in order and a
  // job's final status never overtakes its last step.
  let relayed = Promise.resolve();
  const relay = (notice: MetricsNotice) => {
    relayed = relayed
      .then(() => relayNotice(io, deps.db, notice))
      .catch((error: unknown) => console.error(`web: realtime relay failed: ${messageOf(error)}`));
  };
  let recent: { at: number; notice: MetricsNotice }[] = [];
  const lease = new LeaderLease(deps.url, "realtime-relay", {
    ...(deps.leaseRetryMs ? { retryMs: deps.leaseRetryMs } : {}),
    onChange: (held) => {
      if (!held) return;
      console.log("web: relaying job events for every web process");
      for (const { notice } of recent) relay(notice);
      recent = [];
    },
  });
  const listener = new PgListener(deps.url);
  const onNotice = (payload: string) => {
    const notice = parseMetricsNotice(payload);
    if (!notice) return;
    if (lease.held) return relay(notice);
    const now = Date.now();
    recent = recent.filter((r) => now - r.at < REPLAY_MS);
    recent.push({ at: now, notice });
  };
  const close = async () => {
    stopWatching();
    await listener.close();
    await lease.close();
    // Closing the engine drops the transports without a disconnect packet, so
    // clients reconnect (to another process, or this one once restarted).
    io.engine.close();
    await relayed;
    // Tells the other processes this one is gone (io.close would close the HTTP server, the caller's).
    await Promise.resolve(io.of("/").adapter.close()).catch(() => {});
    await pool.end().catch(() => {});
  };
  try {
    await listener.subscribe(METRICS_CHANNEL, onNotice);
    await lease.start();
  } catch (error) {
    await close();
    throw error;
  }
  return {
    get relaying() {
      return lease.held;
    },
    close,
  };
}
