// HTTP to the OpenTinker REST API (/api/v1), with the API key, and errors that
// carry the server's message (which names the bad field) and status.
export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly status: number,
    message: string,
    readonly code?: string,
  ) {
    super(message);
  }
}

export interface RemoteOptions {
  /** The service's address, e.g. http://127.0.0.1:3000. */
  baseUrl: string;
  apiKey: string;
}

/**
 * A 503 means the service was busy and wrote nothing (e.g. a worker is letting
 * an idle adapter go to make room, or a web process drains): the same call is
 * sent again after a backoff, as Tinker's own client does.
 */
const BUSY_RETRIES = { attempts: 8, firstDelayMs: 250, maxDelayMs: 4_000 };

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class Api {
  private readonly root: string;

  constructor(private readonly options: RemoteOptions) {
    this.root = `${options.baseUrl.replace(/\/+$/, "")}/api`;
  }

  private send(method: "GET" | "POST" | "DELETE", route: string, body?: unknown): Promise<Response> {
    return fetch(`${this.root}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  }

  /** Sends the call, again after a backoff while the service answers 503 (busy, nothing written). */
  private async sendThroughBusy(method: "GET" | "POST" | "DELETE", route: string, body?: unknown) {
    for (let attempt = 1, delay = BUSY_RETRIES.firstDelayMs; ; attempt++) {
      const response = await this.send(method, route, body);
      if (response.status !== 503 || attempt >= BUSY_RETRIES.attempts) return response;
      await response.body?.cancel();
      await pause(delay);
      delay = Math.min(BUSY_RETRIES.maxDelayMs, delay * 2);
    }
  }

  async request<T>(method: "GET" | "POST" | "DELETE", route: string, body?: unknown): Promise<T> {
    const response = await this.sendThroughBusy(method, route, body);
    const text = await response.text();
    let parsed: unknown = null;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      throw new ApiError(
        response.status,
        `${method} ${route}: the server answered ${response.status} with non-JSON`,
      );
    }
    if (!response.ok) {
      const error = parsed as { message?: string; code?: string } | null;
      throw new ApiError(
        response.status,
        `${method} ${route}: ${error?.message ?? response.statusText}`,
        error?.code,
      );
    }
    return parsed as T;
  }
}
