// The whole API: one router per domain. The same procedures serve tRPC (the
// dashboard and the SDK's typed client) and REST under /api/v1 with an OpenAPI
// document (other languages), both served by apps/web.
import { adaptersRouter } from "./routers/adapters.ts";
import { apiKeysRouter } from "./routers/api-keys.ts";
import { environmentsRouter } from "./routers/environments.ts";
import { futuresRouter } from "./routers/futures.ts";
import { jobsRouter } from "./routers/jobs.ts";
import { modelsRouter } from "./routers/models.ts";
import { playgroundRouter } from "./routers/playground.ts";
import { samplingRouter } from "./routers/sampling.ts";
import { trainingRouter } from "./routers/training.ts";
import { workersRouter } from "./routers/workers.ts";
import { createCallerFactory, router } from "./trpc.ts";

export const appRouter = router({
  models: modelsRouter,
  adapters: adaptersRouter,
  training: trainingRouter,
  sampling: samplingRouter,
  futures: futuresRouter,
  environments: environmentsRouter,
  jobs: jobsRouter,
  apiKeys: apiKeysRouter,
  workers: workersRouter,
  playground: playgroundRouter,
});

export type AppRouter = typeof appRouter;

/** Calls procedures in process, through their middlewares (tests: `createCaller(createInnerContext(…))`). */
export const createCaller = createCallerFactory(appRouter);
