// The SDK's REST calls through a busy service: a 503 (nothing written, e.g. a
// worker making room) is sent again after a backoff; any other refusal is not.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Api, ApiError } from "./api.ts";

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

/** A server that answers each call with the next of `statuses` (then 200), counting the calls. */
async function serving(statuses: number[]) {
  const seen = { calls: 0 };
  server = createServer((req, res) => {
    req.resume();
    const status = statuses[seen.calls++] ?? 200;
    res.writeHead(status, { "content-type": "application/json" });
    res.end(JSON.stringify(status === 200 ? { ok: true } : { message: `status ${status}` }));
  });
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  const api = new Api({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: "k" });
  return { api, seen };
}

describe("Api.request", () => {
  it("sends a call the service was too busy for again, until it is answered", async () => {
    const { api, seen } = await serving([503, 503]);
    expect(await api.request("POST", "/v1/training/forward-backward", { x: 1 })).toEqual({ ok: true });
    expect(seen.calls).toBe(3);
  });

  it("does not send a refused call again", async () => {
    const { api, seen } = await serving([429]);
    const error = await api.request("POST", "/v1/adapters", {}).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ApiError);
    expect(error).toMatchObject({ status: 429, message: "POST /v1/adapters: status 429" });
    expect(seen.calls).toBe(1);
  });
});
