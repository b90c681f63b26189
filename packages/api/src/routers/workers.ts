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
      (await listWorkers(ctx.db)).map((w) => ({
        id: w.id,
        host: w.host,
        status: w.status,
        capacity: w.capacity,
        loadedModels: w.loadedModels,
        device: w.device,
        deviceDescription: w.deviceDescription,
        deviceMemoryMiB: w.deviceMemoryMiB,
        kvCacheMiB: w.kvCacheMiB,
        policyPoolMiB: w.policyPoolMiB,
        adapterMemoryMiB: w.adapterMemoryMiB,
        placedAdapters: w.placedAdapters,
        placedAdapterBytes: w.placedAdapterBytes,
        heartbeatAt: iso(w.heartbeatAt),
      })),
    ),
});
