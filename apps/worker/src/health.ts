// The worker's health for an orchestrator (Kubernetes probes), on
// WORKER_HEALTH_PORT when set: the same two routes as the web process.
// Readiness (/api/health): registered, its heartbeat reaching the database, not
// draining. Liveness (/api/health/live): the process answers, so a database
// outage does not get every worker restarted.
import { createServer, type Server } from "node:http";

export const HEALTH_ROUTES = { ready: "/api/health", live: "/api/health/live" } as const;

export interface WorkerHealth {
  workerId: string | null;
  /** When the last heartbeat reached the database (ms since the epoch), or null before registration. */
  lastBeatAt: number | null;
  draining: boolean;
}

export function healthStatus(health: WorkerHealth, staleAfterMs: number, now = Date.now()) {
  if (health.draining) return { code: 503, status: "draining" } as const;
  if (!health.workerId || health.lastBeatAt === null) return { code: 503, status: "starting" } as const;
  if (now - health.lastBeatAt > staleAfterMs) return { code: 503, status: "heartbeat failing" } as const;
  return { code: 200, status: "ok" } as const;
}

export function startHealthServer(
  port: number,
  host: string,
  staleAfterMs: number,
  health: () => WorkerHealth,
): Promise<Server> {
  const server = createServer((req, res) => {
    const send = (code: number, body: unknown) => {
      res.writeHead(code, { "content-type": "application/json; charset=utf-8", "cache-control": "no-store" });
      res.end(JSON.stringify(body));
    };
    const url = new URL(req.url ?? "/", "http://localhost");
    if (req.method !== "GET" && req.method !== "HEAD") return send(405, { error: `use GET ${url.pathname}` });
    if (url.pathname === HEALTH_ROUTES.live) return send(200, { status: "ok" });
    if (url.pathname !== HEALTH_ROUTES.ready) return send(404, { error: `no route ${url.pathname}` });
    const now = health();
    const { code, status } = healthStatus(now, staleAfterMs);
    send(code, {
      status,
      workerId: now.workerId,
      lastHeartbeatAt: now.lastBeatAt === null ? null : new Date(now.lastBeatAt).toISOString(),
    });
  });
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve(server));
  });
}
