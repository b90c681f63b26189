import pg from "pg";

/** Thrown when the configured database cannot be reached; its message is one line. */
export class DatabaseUnreachableError extends Error {
  override name = "DatabaseUnreachableError";
}

/** host:port of a connection URL, for messages (never the credentials). */
export function describeDatabaseUrl(url: string): string {
  try {
    const parsed = new URL(url);
    const database = parsed.pathname.replace(/^\//, "") || "(default)";
    return `${parsed.hostname || "localhost"}:${parsed.port || "5432"}/${database}`;
  } catch {
    return "(an unparseable URL)";
  }
}

/** Validates a DATABASE_URL and checks that the server answers. */
export async function assertDatabaseReachable(url: string, timeoutMs = 5000): Promise<void> {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new DatabaseUnreachableError(
      "DATABASE_URL is not a valid URL (expected postgresql://user:pass@host:port/db)",
    );
  }
  if (parsed.protocol !== "postgresql:" && parsed.protocol !== "postgres:") {
    throw new DatabaseUnreachableError(
      `DATABASE_URL must start with postgresql:// (got ${parsed.protocol}//${parsed.hostname})`,
    );
  }
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: timeoutMs });
  client.on("error", () => {});
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new DatabaseUnreachableError(`cannot reach database at ${describeDatabaseUrl(url)}: ${reason}`);
  } finally {
    await client.end().catch(() => {});
  }
}
