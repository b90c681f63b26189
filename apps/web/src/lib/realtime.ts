"use client";
// A job's live metrics over Socket.IO (same origin, the session cookie
// authenticates). On every (re)connection the hook subscribes again and merges
// the history the ack carries into what it already has, keyed by step, so the
// charts survive a dropped connection without a reload.
import { useEffect, useMemo, useRef, useState } from "react";
import { io, type Socket } from "socket.io-client";
import {
  EMPTY_TABLE,
  type MetricRow,
  mergePoints,
  mergeSteps,
  type StepTable,
  tableRows,
} from "../components/jobs/metric-table.ts";
import {
  type ClientToServerEvents,
  REALTIME_PATH,
  type ServerToClientEvents,
  type StatusEvent,
  type SubscribeAck,
} from "../server/realtime/events.ts";

export type Connection =
  | { state: "connecting" }
  | { state: "live" }
  | { state: "reconnecting" }
  | { state: "failed"; error: string };

type RealtimeSocket = Socket<ServerToClientEvents, ClientToServerEvents>;

const SUBSCRIBE_TIMEOUT_MS = 10_000;
/** Live steps are drawn in batches: a fast job stores many steps a second. */
const FLUSH_MS = 250;

export interface JobMetricsHandlers {
  /** A `status` event for this job. */
  onStatus?: (status: StatusEvent["status"]) => void;
  /** Live `metrics` events for this job (not history) were drawn; `step` is the newest. */
  onStep?: (step: number) => void;
}

export function useJobMetrics(
  jobId: string,
  handlers: JobMetricsHandlers = {},
): { rows: MetricRow[]; connection: Connection } {
  const [table, setTable] = useState<StepTable>(EMPTY_TABLE);
  const [connection, setConnection] = useState<Connection>({ state: "connecting" });
  // The latest handlers, without reconnecting when a caller passes new closures.
  const handlersRef = useRef(handlers);
  useEffect(() => {
    handlersRef.current = handlers;
  });

  useEffect(() => {
    setTable(EMPTY_TABLE);
    setConnection({ state: "connecting" });
    const socket: RealtimeSocket = io({ path: REALTIME_PATH, transports: ["websocket"] });

    let pending: { step: number; values: Record<string, number> }[] = [];
    let flushTimer: ReturnType<typeof setTimeout> | undefined;
    const flush = () => {
      flushTimer = undefined;
      const batch = pending;
      pending = [];
      if (batch.length === 0) return;
      setTable((current) => mergeSteps(current, batch));
      handlersRef.current.onStep?.(Math.max(...batch.map((e) => e.step)));
    };

    const subscribe = () => {
      socket
        .timeout(SUBSCRIBE_TIMEOUT_MS)
        .emit("subscribe", { jobId }, (error: Error | null, ack: SubscribeAck) => {
          if (error) {
            // No answer in time: ask again while still connected (a reconnect asks anyway).
            if (socket.connected) subscribe();
            return;
          }
          if (!ack.ok) return setConnection({ state: "failed", error: ack.error });
          setTable((current) => mergePoints(current, ack.metrics));
          setConnection({ state: "live" });
        });
    };

    socket.on("connect", subscribe);
    socket.on("disconnect", (reason) => {
      // The server ended this connection on purpose; Socket.IO will not retry by itself.
      if (reason === "io server disconnect") socket.connect();
      setConnection({ state: "reconnecting" });
    });
    socket.on("connect_error", (error) => {
      // `active` is false when the server refused the connection (not signed in):
      // retrying would not help.
      setConnection(socket.active ? { state: "reconnecting" } : { state: "failed", error: error.message });
    });
    socket.on("metrics", (event) => {
      if (event.jobId !== jobId) return;
      pending.push({ step: event.step, values: event.values });
      flushTimer ??= setTimeout(flush, FLUSH_MS);
    });
    socket.on("status", (event) => {
      if (event.jobId !== jobId) return;
      // The last steps first, so the final status never shows before them.
      clearTimeout(flushTimer);
      flush();
      handlersRef.current.onStatus?.(event.status);
    });

    return () => {
      clearTimeout(flushTimer);
      socket.removeAllListeners();
      socket.disconnect();
    };
  }, [jobId]);

  const rows = useMemo(() => tableRows(table), [table]);
  return { rows, connection };
}
