// One holder at a time among many processes: a session-level advisory lock,
// held on a connection of its own. Postgres frees it when the holder's process
// or connection dies, and another process takes it at its next try. The web
// processes use it to pick the one that relays job events to every process.
import pg from "pg";

export interface LeaderLeaseOptions {
  /** How often a process that does not hold the lease tries to take it. */
  retryMs?: number;
  /** Called when this process takes the lease (true) or loses it (false). */
  onChange?: (held: boolean) => void;
}

export class LeaderLease {
  private client: pg.Client | null = null;
  private timer: NodeJS.Timeout | null = null;
  private closed = false;
  private holding = false;
  private readonly retryMs: number;

  constructor(
    private readonly url: string,
    /** What is led; processes with the same name compete for one lease. */
    readonly name: string,
    private readonly options: LeaderLeaseOptions = {},
  ) {
    this.retryMs = options.retryMs ?? 1000;
  }

  get held(): boolean {
    return this.holding;
  }

  /** Makes a first try (so the first process up leads at once), then keeps trying in the background. */
  async start(): Promise<void> {
    await this.attempt();
  }

  private async attempt(): Promise<void> {
    this.timer = null;
    if (this.closed) return;
    try {
      const client = await this.connection();
      const result = await client.query<{ held: boolean }>(
        "SELECT pg_try_advisory_lock(hashtext($1)) AS held",
        [`leader:${this.name}`],
      );
      if (result.rows[0]?.held) return this.setHeld(true);
    } catch {
      // Unreachable for now: the next try reconnects.
    }
    this.schedule();
  }

  private schedule(): void {
    if (!this.closed && !this.holding) this.timer ??= setTimeout(() => void this.attempt(), this.retryMs);
  }

  private async connection(): Promise<pg.Client> {
    if (this.client) return this.client;
    const client = new pg.Client({ connectionString: this.url, keepAlive: true });
    client.on("error", () => {
      // The lock went with the connection: let another process lead, and compete again.
      if (this.client !== client) return;
      this.client = null;
      void client.end().catch(() => {});
      this.setHeld(false);
      this.schedule();
    });
    await client.connect();
    this.client = client;
    return client;
  }

  private setHeld(held: boolean): void {
    if (this.holding === held) return;
    this.holding = held;
    this.options.onChange?.(held);
  }

  /** Gives the lease up (ending the connection frees the lock at once). */
  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    this.holding = false;
    const client = this.client;
    this.client = null;
    await client?.end().catch(() => {});
  }
}
