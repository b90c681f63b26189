// An HTTP proxy for tests, in front of a real S3-compatible server (s3rver),
// that makes chosen writes fail: once armed, the next N objects written under
// matching keys have every PUT answered with an S3 error (500 InternalError or
// 503 SlowDown) without reaching the server, so however often a client retries,
// none of them is stored; later objects go through. A whole object rather than a
// count of PUTs, so the fault does not depend on how a client spreads its
// retries over an object's files. Everything else passes through unchanged (the
// Host header included, so request signatures hold).
import { createServer, type IncomingMessage, request, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type RefusalStatus = 500 | 503;

export interface RefusePlan {
  /** Objects to refuse: the next ones with a matching PUT (an object: the folder of the keys put). */
  count: number;
  /** Which keys (the request path, "/bucket/key", decoded); all when omitted. */
  match?: RegExp;
  /** 500 InternalError (default) or 503 SlowDown; both are retryable for S3 clients. */
  status?: RefusalStatus;
}

const S3_CODES: Record<RefusalStatus, string> = { 500: "InternalError", 503: "SlowDown" };

function errorBody(status: RefusalStatus, key: string): string {
  return `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${S3_CODES[status]}</Code><Message>injected fault</Message><Resource>${key}</Resource></Error>`;
}

export class FaultyS3Proxy {
  /** The keys of the PUTs refused so far, in order (a retried PUT again). */
  readonly refused: string[] = [];
  /** The objects refused so far (each refused for good), in order. */
  readonly refusedObjects: string[] = [];
  private plan: Required<RefusePlan> | null = null;

  private constructor(
    private readonly server: Server,
    readonly endpoint: string,
  ) {}

  /** Listens on a free loopback port and forwards to `target` (e.g. an s3rver endpoint). */
  static start(target: string): Promise<FaultyS3Proxy> {
    const upstream = new URL(target);
    let proxy: FaultyS3Proxy | undefined;
    const server = createServer((req, res) => proxy?.handle(req, res, upstream));
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as AddressInfo;
        proxy = new FaultyS3Proxy(server, `http://127.0.0.1:${port}`);
        resolve(proxy);
      });
    });
  }

  /** Arms the proxy: the next `count` objects with a matching PUT are refused (replacing a plan not yet spent). */
  refuseObjects(plan: RefusePlan): void {
    if (!Number.isInteger(plan.count) || plan.count < 0)
      throw new RangeError(`refuseObjects: count must be a whole number >= 0, not ${plan.count}`);
    this.plan = { match: /.*/, status: 500, ...plan };
  }

  /** Objects the armed plan has yet to refuse. */
  get pending(): number {
    return this.plan?.count ?? 0;
  }

  /** The status to refuse a PUT of `key` with, or null to let it through. */
  private refusal(key: string): RefusalStatus | null {
    const plan = this.plan;
    if (!plan?.match.test(key)) return null;
    const object = key.slice(0, key.lastIndexOf("/"));
    if (this.refusedObjects.includes(object)) return plan.status;
    if (plan.count === 0) return null;
    plan.count--;
    this.refusedObjects.push(object);
    return plan.status;
  }

  private handle(req: IncomingMessage, res: ServerResponse, upstream: URL): void {
    const key = decodeURIComponent(new URL(req.url ?? "/", "http://proxy").pathname);
    const status = req.method === "PUT" ? this.refusal(key) : null;
    if (status === null) return void this.forward(req, res, upstream);
    this.refused.push(key);
    // Read the body first, so the client sees an answer rather than a reset.
    req.resume();
    req.once("end", () => {
      res.writeHead(status, { "content-type": "application/xml" });
      res.end(errorBody(status, key));
    });
  }

  private forward(req: IncomingMessage, res: ServerResponse, upstream: URL): void {
    // The client's 100-continue was answered here already; the rest is passed as it was signed.
    const { expect: _expect, ...headers } = req.headers;
    const out = request(
      { host: upstream.hostname, port: upstream.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    out.on("error", () => res.destroy());
    req.pipe(out);
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
