// A typed tRPC client of the whole API, for TypeScript programs: every
// procedure with its input and output types, authenticated by an API key and
// batched over HTTP. The router's type is imported type-only, so no server
// code is loaded at run time.
import type { AppRouter } from "@opentinker/api";
import { createTRPCClient, httpBatchLink, type TRPCClient } from "@trpc/client";

export interface OpenTinkerClientOptions {
  /** The service's address, e.g. http://127.0.0.1:3000 (the client calls <url>/api/trpc). */
  url: string;
  apiKey: string;
  /** A fetch of your own (proxies, tests); the global one otherwise. */
  fetch?: typeof fetch;
}

export type OpenTinkerClient = TRPCClient<AppRouter>;

/** `client.adapters.list.query({})`, `client.jobs.create.mutate({ … })`, … */
export function createOpenTinkerClient(options: OpenTinkerClientOptions): OpenTinkerClient {
  return createTRPCClient<AppRouter>({
    links: [
      httpBatchLink({
        url: `${options.url.replace(/\/+$/, "")}/api/trpc`,
        headers: { authorization: `Bearer ${options.apiKey}` },
        ...(options.fetch ? { fetch: options.fetch } : {}),
      }),
    ],
  });
}
