// The workers (shared by every team): what the dashboard's overview shows.
import { z } from "zod";
import { router, teamProcedure } from "../init.ts";
import { iso } from "../serialize.ts";

const ZWorker = z.object({
  id: z.string(),
  host: z.string(),
  status: z.enum(["ONLINE", "DRAINING", "OFFLINE"]),
  capacity: z.number(),
  placedAdapters: z.number(),
  loadedModels: z.array(z.string()),
  heartbeatAt: z.string(),
});

export const workersRouter = router({
  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/workers", protect: true, tags: ["workers"] } })
    .input(z.object({}))
    .output(z.array(ZWorker))
    .query(async ({ ctx }) => {
      const rows = await ctx.db.worker.findMany({
        where: { status: { not: "OFFLINE" } },
        orderBy: { startedAt: "asc" },
        select: {
          id: true,
          host: true,
          status: true,
          capacity: true,
          loadedModels: true,
          heartbeatAt: true,
          _count: { select: { adapters: true } },
        },
      });
      return rows.map(({ _count, heartbeatAt, ...w }) => ({
        ...w,
        placedAdapters: _count.adapters,
        heartbeatAt: iso(heartbeatAt),
      }));
    }),
});
