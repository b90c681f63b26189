// A connection's requests: join a job's room (after checking the job is the
// caller's team's) with its history, or leave it.
import type { Caller } from "@opentinker/api";
import { type Db, getJob, listMetrics } from "@opentinker/db";
import type { Socket } from "socket.io";
import { nulByteAt, nulByteMessage } from "../api/body.ts";
import { resolveSocketCaller, UNAUTHENTICATED_MESSAGE } from "./auth.ts";
import {
  type ClientToServerEvents,
  jobRoom,
  type ServerToClientEvents,
  type SubscribeAck,
  ZJobRequest,
} from "./events.ts";

export interface SocketData {
  caller: Caller;
}

export type RelaySocket = Socket<
  ClientToServerEvents,
  ServerToClientEvents,
  Record<string, never>,
  SocketData
>;

const BAD_REQUEST = "send { jobId: string }";

/** The request's job id, or why it is refused (no NUL byte in any string, as on every front). */
function jobRequest(request: unknown): { jobId: string } | { error: string } {
  const parsed = ZJobRequest.safeParse(request);
  if (!parsed.success) return { error: BAD_REQUEST };
  const nul = nulByteAt(parsed.data);
  return nul === null ? parsed.data : { error: nulByteMessage(nul) };
}

async function subscribe(
  db: Db,
  sessionSecret: string,
  socket: RelaySocket,
  request: unknown,
): Promise<SubscribeAck> {
  const parsed = jobRequest(request);
  if ("error" in parsed) return { ok: false, error: parsed.error };
  const { jobId } = parsed;
  // The handshake's credentials are checked again: the key may have been revoked,
  // or the member removed, since the connection opened.
  const caller = await resolveSocketCaller(db, socket.handshake, sessionSecret);
  if (!caller || caller.teamId !== socket.data.caller.teamId) {
    setImmediate(() => socket.disconnect(true));
    return { ok: false, error: UNAUTHENTICATED_MESSAGE };
  }
  const { teamId } = caller;
  // Another team's job and a missing one get the same answer, so ids of other
  // teams' jobs cannot be probed.
  if (!(await getJob(db, teamId, jobId))) return { ok: false, error: `job ${jobId} not found` };
  // A socket that left meanwhile must not be put in a room it would never leave.
  if (socket.disconnected) return { ok: false, error: "disconnected" };
  // Join before reading the history: a step stored in between then arrives
  // live (perhaps twice; clients key by step) rather than not at all.
  await socket.join(jobRoom(jobId));
  const rows = await listMetrics(db, teamId, jobId);
  return { ok: true, metrics: rows.map(({ step, name, value }) => ({ step, name, value })) };
}

export function handleJobRooms(db: Db, sessionSecret: string, socket: RelaySocket): void {
  socket.on("subscribe", (request, ack) => {
    // Without an ack the client could not learn the outcome nor get the history.
    if (typeof ack !== "function") return;
    subscribe(db, sessionSecret, socket, request).then(ack, (error: unknown) => {
      console.error(`web: realtime subscribe failed: ${error instanceof Error ? error.message : error}`);
      ack({ ok: false, error: "internal error" });
    });
  });
  socket.on("unsubscribe", (request, ack) => {
    const parsed = jobRequest(request);
    if (!("error" in parsed)) void socket.leave(jobRoom(parsed.jobId));
    if (typeof ack === "function") ack("error" in parsed ? { ok: false, error: parsed.error } : { ok: true });
  });
}
