import type { IncomingMessage, ServerResponse } from "node:http";
import { appRouter } from "@opentinker/api";
import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import {
  checkJsonDepth,
  HttpError,
  jsonMayHoldNul,
  MAX_BODY_BYTES,
  nulByteAt,
  nulByteMessage,
  readBodyText,
  requireJsonContentType,
} from "./body.ts";
import { type ApiDeps, contextFactory } from "./context.ts";

/** An error in tRPC's own wire shape, so the dashboard's client reads it like any other. */
function sendTrpcError(res: ServerResponse, error: HttpError): void {
  res.writeHead(error.status, { "content-type": "application/json; charset=utf-8" });
  res.end(
    JSON.stringify({
      error: { message: error.message, code: -32600, data: { code: error.code, httpStatus: error.status } },
    }),
  );
}

/** Refuses input text holding a NUL byte, naming the field (a batch's inputs are keyed by their index). */
function refuseNulInput(text: string, batch: boolean): void {
  if (!jsonMayHoldNul(text)) return;
  let input: unknown;
  try {
    input = JSON.parse(text);
  } catch {
    return; // tRPC refuses malformed JSON itself
  }
  const values = batch && typeof input === "object" && input !== null ? Object.values(input) : [input];
  for (const value of values) {
    const path = nulByteAt(value);
    if (path !== null) throw new HttpError(400, nulByteMessage(path === "body" ? "input" : path));
  }
}

/**
 * The body (or a query's `input` parameter) read and checked the same way as
 * REST's before tRPC sees it: size and nesting depth capped, no NUL byte in any
 * string. tRPC then parses the text we hand it.
 */
async function checkedInput(req: IncomingMessage & { body?: unknown }): Promise<void> {
  if (req.method === "POST") {
    requireJsonContentType(req);
    req.body = await readBodyText(req, MAX_BODY_BYTES);
  }
  const query = new URL(req.url ?? "/", "http://localhost").searchParams;
  const text = req.method === "POST" ? (req.body as string) : (query.get("input") ?? "");
  checkJsonDepth(text);
  refuseNulInput(text, query.get("batch") === "1");
}

/** tRPC over HTTP at /api/trpc, for the dashboard's typed client. */
export function createTrpcHandler(deps: ApiDeps) {
  const handler = createHTTPHandler({
    router: appRouter,
    basePath: "/api/trpc/",
    maxBodySize: MAX_BODY_BYTES,
    createContext: contextFactory(deps),
    onError: ({ error, path }) => {
      if (error.code === "INTERNAL_SERVER_ERROR")
        console.error(`web: ${path ?? "trpc"} failed: ${error.cause?.message ?? error.message}`);
    },
  });
  return async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    try {
      await checkedInput(req);
    } catch (error) {
      if (error instanceof HttpError) return sendTrpcError(res, error);
      throw error;
    }
    await handler(req, res);
  };
}
