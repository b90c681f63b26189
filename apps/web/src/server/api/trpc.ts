import { createHTTPHandler } from "@trpc/server/adapters/standalone";
import { appRouter } from "../trpc/router.ts";
import { MAX_BODY_BYTES } from "./body.ts";
import { type ApiDeps, contextFactory } from "./context.ts";

/** tRPC over HTTP at /api/trpc, for the dashboard's typed client. */
export function createTrpcHandler(deps: ApiDeps) {
  return createHTTPHandler({
    router: appRouter,
    basePath: "/api/trpc/",
    maxBodySize: MAX_BODY_BYTES,
    createContext: contextFactory(deps),
  });
}
