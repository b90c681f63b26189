// A TCP forwarder for tests: listens on one address and relays each connection
// to a target. It lets a test host in a network namespace reach a server that
// listens on loopback only (Postgres, the S3 server) through the host's veth
// address, and it can cut connections to show what a flaky network does.
import { createConnection, createServer, type Server, type Socket } from "node:net";

export interface Endpoint {
  host: string;
  port: number;
}

export class TcpForwarder {
  /** Connections cut so far by `cutResponses`. */
  cuts = 0;
  private cutPlan: { connections: number; afterBytes: number } | null = null;
  /** Bytes clients may still send before the link goes down for good (null: no limit). */
  private sendBudget: number | null = null;
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly address: Endpoint,
  ) {}

  static start(listen: Endpoint, target: Endpoint): Promise<TcpForwarder> {
    let forwarder: TcpForwarder | undefined;
    const server = createServer((client) => forwarder?.relay(client, target));
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(listen.port, listen.host, () => {
        const bound = server.address();
        const port = typeof bound === "object" && bound ? bound.port : listen.port;
        forwarder = new TcpForwarder(server, { host: listen.host, port });
        resolve(forwarder);
      });
    });
  }

  get url(): string {
    return `http://${this.address.host}:${this.address.port}`;
  }

  /** The next `connections` new connections are cut after `afterBytes` of the server's answer. */
  cutResponses(connections: number, afterBytes: number): void {
    this.cutPlan = { connections, afterBytes };
  }

  /** After `bytes` more sent by clients (in all), every connection dies, and so does every new one. */
  failAfterSentBytes(bytes: number): void {
    this.sendBudget = bytes;
  }

  private relay(client: Socket, target: Endpoint): void {
    if (this.sendBudget !== null && this.sendBudget <= 0) return void client.destroy();
    const upstream = createConnection(target);
    for (const socket of [client, upstream]) {
      this.sockets.add(socket);
      socket.once("close", () => this.sockets.delete(socket));
      socket.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    const plan = this.cutPlan;
    if (plan && plan.connections > 0) {
      plan.connections--;
      let sent = 0;
      upstream.on("data", (chunk: Buffer) => {
        if (sent + chunk.length <= plan.afterBytes) {
          sent += chunk.length;
          client.write(chunk);
          return;
        }
        client.write(chunk.subarray(0, plan.afterBytes - sent));
        this.cuts++;
        client.destroy();
        upstream.destroy();
      });
      this.forwardRequests(client, upstream);
      return;
    }
    this.forwardRequests(client, upstream);
    upstream.pipe(client);
  }

  private forwardRequests(client: Socket, upstream: Socket): void {
    client.on("data", (chunk: Buffer) => {
      if (this.sendBudget === null) return void upstream.write(chunk);
      const allowed = Math.max(0, Math.min(chunk.length, this.sendBudget));
      this.sendBudget -= chunk.length;
      if (allowed > 0) upstream.write(chunk.subarray(0, allowed));
      if (this.sendBudget <= 0) for (const socket of this.sockets) socket.destroy();
    });
    client.on("end", () => upstream.end());
  }

  close(): Promise<void> {
    for (const socket of this.sockets) socket.destroy();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }
}
