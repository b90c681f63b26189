// Live job metrics for the dashboard. Each web process holds one LISTEN on
// METRICS_CHANNEL and turns the workers' NOTIFYs into Socket.IO events in
// per-job rooms; since every process hears every notice, a client may connect
// to any of them.
import type { Server as HttpServer } from "node:http";
import { type Db, listMetrics, METRICS_CHANNEL, PgListener } from "@opentinker/db";
import { Server } from "socket.io";
import { type AccessWatch, revokes } from "../api/access.ts";
import { resolveSocketCaller, UNAUTHENTICATED_MESSAGE } from "./auth.ts";
import { type ClientToServerEvents, jobRoom, REALTIME_PATH, type ServerToClientEvents } from "./events.ts";
import { handleJobRooms, type RelaySocket, type SocketData } from "./job-rooms.ts";
import { type MetricsNotice, parseMetricsNotice } from "./notices.ts";

type RelayServer = Server<ClientToServerEvents, ServerToClientEvents, Record<string, never>, SocketData>;

export interface MetricsRelay {
  /** Ends every connection and the LISTEN; the HTTP server stays the caller's to close. */
  close(): Promise<void>;
}

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
  // Every process hears every job's notices: read only for jobs followed here.
  if (!io.sockets.adapter.rooms.has(room)) return;
  const rows = await listMetrics(db, notice.teamId, notice.jobId, notice.step);
  const values = Object.fromEntries(rows.filter((r) => r.step === notice.step).map((r) => [r.name, r.value]));
  io.to(room).emit("metrics", { jobId: notice.jobId, step: notice.step, values });
}

/** Serves `/socket.io` on the web process's HTTP server; resolves once the LISTEN is in place. */
export async function attachMetricsRelay(
  server: HttpServer,
  deps: { db: Db; url: string; sessionSecret: string; access: AccessWatch },
): Promise<MetricsRelay> {
  const io: RelayServer = new Server(server, { path: REALTIME_PATH, serveClient: false });
  io.use(authenticate(deps.db, deps.sessionSecret));
  io.on("connection", (socket) => handleJobRooms(deps.db, deps.sessionSecret, socket));
  // A revoked key or ended session loses its open connections at once, not at its next subscribe.
  const stopWatching = deps.access.onRevoked((revocation) => {
    for (const socket of io.of("/").sockets.values())
      if (revokes(revocation, socket.data.caller)) socket.disconnect(true);
  });
  const listener = new PgListener(deps.url);
  // Notices are relayed one at a time, so steps reach clients in order and a
  // job's final status never overtakes its last step.
  let relayed = Promise.resolve();
  const onNotice = (payload: string) => {
    const notice = parseMetricsNotice(payload);
    if (!notice) return;
    relayed = relayed
      .then(() => relayNotice(io, deps.db, notice))
      .catch((error: unknown) => console.error(`web: realtime relay failed: ${messageOf(error)}`));
  };
  const close = async () => {
    stopWatching();
    await listener.close();
    // Closing the engine drops the transports without a disconnect packet, so
    // clients reconnect (to another process, or this one once restarted).
    io.engine.close();
    await relayed;
  };
  try {
    await listener.subscribe(METRICS_CHANNEL, onNotice);
  } catch (error) {
    await close();
    throw error;
  }
  return { close };
}
