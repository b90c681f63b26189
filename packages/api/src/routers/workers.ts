// The workers (shared by every team): what the dashboard's overview shows.
import { listWorkers } from "@opentinker/db";
import { ZNoInput, ZWorker } from "@opentinker/protocol";
import { z } from "zod";
import { iso } from "../present.ts";
import { router, teamRoute } from "../trpc.ts";

export const workersRouter = router({
  list: teamRoute("GET", "/v1/workers", "workers")
    .input(ZNoInput)
    .output(z.array(ZWorker))
    .query(async ({ ctx }) =>
      (await listWorkers(ctx.db)).map(
        ({ _count, heartbeatAt, id, host, status, capacity, loadedModels }) => ({
          id,
          host,
          status,
          capacity,
          loadedModels,
          placedAdapters: _count.adapters,
          heartbeatAt: iso(heartbeatAt),
        }),
      ),
    ),
});
