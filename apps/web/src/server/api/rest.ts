// REST under /api/v1 (and its OpenAPI document at /api/openapi.json), served by
// the same tRPC procedures as the dashboard.
import type { IncomingMessage, ServerResponse } from "node:http";
import { createOpenApiNodeHttpHandler, generateOpenApiDocument } from "trpc-to-openapi";
import { appRouter } from "../trpc/router.ts";
import { HttpError, readJsonBody } from "./body.ts";
import { type ApiDeps, contextFactory } from "./context.ts";

export function openApiDocument(baseUrl: string) {
  return generateOpenApiDocument(appRouter, {
    title: "OpenTinker API",
    version: "1.0.0",
    baseUrl,
    description:
      "Train and sample LoRA and full-parameter policies. Authenticate with `Authorization: Bearer <API key>`.",
  });
}

interface ValidationIssue {
  path?: (string | number)[];
  message?: string;
}

/**
 * The library answers a schema failure with "Input validation failed" and the
 * issues; we lead with the first issue, so the message itself names the field.
 */
function nameTheField(body: string): string {
  try {
    const parsed = JSON.parse(body) as { message?: string; issues?: ValidationIssue[] };
    const issue = parsed.issues?.[0];
    if (!issue) return body;
    parsed.message = `${issue.path?.length ? issue.path.join(".") : "input"}: ${issue.message}`;
    return JSON.stringify(parsed);
  } catch {
    return body;
  }
}

function sendError(res: ServerResponse, status: number, message: string): void {
  res.writeHead(status, { "content-type": "application/json; charset=utf-8" });
  res.end(JSON.stringify({ message, code: status === 413 ? "PAYLOAD_TOO_LARGE" : "BAD_REQUEST" }));
}

export function createRestHandler(deps: ApiDeps) {
  const handler = createOpenApiNodeHttpHandler({ router: appRouter, createContext: contextFactory(deps) });
  return async (req: IncomingMessage & { body?: unknown }, res: ServerResponse): Promise<void> => {
    req.url = (req.url ?? "/").replace(/^\/api/, "");
    if (req.method === "POST" || req.method === "PUT" || req.method === "PATCH") {
      const type = req.headers["content-type"] ?? "";
      const hasBody =
        Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
      if (hasBody && !type.startsWith("application/json"))
        return sendError(
          res,
          415,
          `send the body as JSON with content-type: application/json (got "${type}")`,
        );
      try {
        req.body = await readJsonBody(req);
      } catch (error) {
        if (error instanceof HttpError) return sendError(res, error.status, error.message);
        throw error;
      }
      // The library only accepts the bare media type.
      req.headers["content-type"] = "application/json";
    }
    const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse;
    res.end = ((chunk?: unknown) =>
      end(
        res.statusCode === 400 && typeof chunk === "string" ? nameTheField(chunk) : chunk,
      )) as ServerResponse["end"];
    await handler(req, res);
  };
}
