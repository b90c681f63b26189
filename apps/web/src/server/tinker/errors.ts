// How a refusal looks on the Tinker protocol: the HTTP status our API gives the
// same mistake, and a JSON body `{ "detail": "<what was wrong>" }`. The SDK
// shows the body in its error; `x-should-retry: false` keeps it from retrying
// a call that cannot succeed.
import type { ServerResponse } from "node:http";
import { publicMessage } from "@opentinker/api";
import type { TRPCError } from "@trpc/server";
import { getHTTPStatusCodeFromError } from "@trpc/server/http";

export function trpcRefusal(error: TRPCError): { errorStatus: number; error: string } {
  return { errorStatus: getHTTPStatusCodeFromError(error), error: publicMessage(error) };
}

const RETRYABLE = new Set([408, 429, 503]);

export function sendRefusal(res: ServerResponse, status: number, detail: string): void {
  const body = JSON.stringify({ detail });
  res.writeHead(status, {
    // The SDK takes a 400 without a content-length for a proxy's refusal (and reconnects): always send one.
    "content-length": Buffer.byteLength(body),
    "content-type": "application/json; charset=utf-8",
    "cache-control": "no-store",
    "x-should-retry": RETRYABLE.has(status) || status >= 500 ? "true" : "false",
  });
  res.end(body);
}
