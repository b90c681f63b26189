import pg from "pg";

export type NotificationHandler = (payload: string) => void;

/**
 * One LISTEN connection per process, shared by every subscriber. After a lost
 * connection it reconnects and calls `onReconnect`, so that waiters can re-read
 * whatever they might have missed meanwhile.
 */
export class PgListener {
  private client: pg.Client | null = null;
  private readonly handlers = new Map<string, Set<NotificationHandler>>();
  private connecting: Promise<void> | null = null;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly onReconnect: () => void = () => {},
  ) {}

  /** Subscribes to a channel; resolves once the LISTEN is in place. */
  async subscribe(channel: string, handler: NotificationHandler): Promise<() => void> {
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      await this.connected();
      await this.client?.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    }
    set.add(handler);
    return () => set.delete(handler);
  }

  private connected(): Promise<void> {
    if (this.client) return Promise.resolve();
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<void> {
    const client = new pg.Client({ connectionString: this.url });
    client.on("notification", (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) handler(message.payload ?? "");
    });
    client.on("error", () => {
      if (this.client !== client) return;
      this.client = null;
      void client.end().catch(() => {});
      if (!this.closed) setTimeout(() => void this.reconnect(), 500);
    });
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${pg.escapeIdentifier(channel)}`);
    this.client = client;
  }

  private async reconnect(): Promise<void> {
    try {
      await this.connected();
      this.onReconnect();
    } catch {
      if (!this.closed) setTimeout(() => void this.reconnect(), 1000);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
