export { type Caller, type Context, createInnerContext, type InnerContextOptions } from "./context.ts";
export { publicMessage, restError, schemaIssues } from "./errors.ts";
export { type AppRouter, appRouter, createCaller } from "./root.ts";
export { type CheckedTrainingCall, checkTrainingCall } from "./routers/training.ts";
export { ShortCache } from "./short-cache.ts";
export { deleteObjectFiles, readObjectFiles } from "./snapshot-files.ts";
export { unauthenticated } from "./trpc.ts";
