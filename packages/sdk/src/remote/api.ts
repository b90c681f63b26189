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

export class Api {
  private readonly root: string;

  constructor(private readonly options: RemoteOptions) {
    this.root = `${options.baseUrl.replace(/\/+$/, "")}/api`;
  }

  async request<T>(method: "GET" | "POST" | "DELETE", route: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.root}${route}`, {
      method,
      headers: {
        authorization: `Bearer ${this.options.apiKey}`,
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
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
