// The remote example's view of its server: a wrong --url, a server that is not
// running, or one lost mid-run is one line naming the URL, not a fetch stack.

const HINT = "start it with `npm start`, or pass --url / set OPENTINKER_URL to where it runs";

export class ServerUnreachableError extends Error {
  override name = "ServerUnreachableError";
}

/** The network error's code (ECONNREFUSED, ENOTFOUND, …), which fetch keeps in its cause. */
function networkCause(error: unknown): string | undefined {
  if (error instanceof DOMException && error.name === "TimeoutError") return "no answer in time";
  if (!(error instanceof TypeError)) return undefined;
  const cause = (error as { cause?: { code?: unknown; message?: unknown } }).cause;
  const code = cause?.code ?? cause?.message;
  return typeof code === "string" ? code : error.message;
}

/** Resolves when `url` answers as an OpenTinker server (GET /api/health). */
export async function assertServerReachable(url: string, timeoutMs = 5_000): Promise<void> {
  if (!URL.canParse(url))
    throw new ServerUnreachableError(`the server URL ${url} is not a URL (e.g. http://127.0.0.1:3000)`);
  let response: Response;
  try {
    response = await fetch(`${url.replace(/\/+$/, "")}/api/health`, {
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (error) {
    const cause = networkCause(error);
    if (cause === undefined) throw error;
    throw new ServerUnreachableError(`cannot reach the OpenTinker server at ${url} (${cause}); ${HINT}`);
  }
  await response.body?.cancel();
  // 503 is OpenTinker saying its database is down; a 404 is some other program on that port.
  if (response.status === 404)
    throw new ServerUnreachableError(`${url} answers, but is not an OpenTinker server; ${HINT}`);
}

/** One line for whatever stopped the example: our errors and the API's already name what was wrong. */
export function describeFailure(error: unknown, url: string): string {
  if (error instanceof ServerUnreachableError) return error.message;
  const cause = networkCause(error);
  if (cause !== undefined) return `lost the OpenTinker server at ${url} (${cause})`;
  return error instanceof Error ? error.message : String(error);
}
