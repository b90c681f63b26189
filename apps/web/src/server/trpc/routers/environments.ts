// Environments a team's jobs run: a built-in kind with its config, or a remote
// HTTP environment on a host the operator allowed (OPENTINKER_REMOTE_ENV_HOSTS).
import {
  isAllowedRemoteHost,
  remoteEnvHosts,
  ZEnvironmentInput,
  ZEnvironmentRequest,
} from "@opentinker/protocol";
import { z } from "zod";
import { badRequest, notFound, router, teamProcedure } from "../init.ts";
import { iso } from "../serialize.ts";

const ZEnvironment = z.object({
  id: z.string(),
  name: z.string(),
  kind: z.enum(["BUILTIN", "REMOTE"]),
  builtin: z.string().nullable(),
  url: z.string().nullable(),
  config: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
});

type Row = {
  id: string;
  name: string;
  kind: "BUILTIN" | "REMOTE";
  builtin: string | null;
  url: string | null;
  config: unknown;
  createdAt: Date;
};

function present(row: Row): z.infer<typeof ZEnvironment> {
  return { ...row, config: (row.config ?? {}) as Record<string, unknown>, createdAt: iso(row.createdAt) };
}

const ZEnvironmentId = z.object({ environmentId: z.string().min(1) });

export const environmentsRouter = router({
  create: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/environments", protect: true, tags: ["environments"] } })
    .input(ZEnvironmentRequest)
    .output(ZEnvironment)
    .mutation(async ({ ctx, input: request }) => {
      const input = ZEnvironmentInput.parse(request);
      if (input.kind === "REMOTE") {
        const allowed = remoteEnvHosts(process.env);
        if (!isAllowedRemoteHost(input.url, allowed))
          badRequest(
            `url: host ${new URL(input.url).host} is not on the allow-list for remote environments (OPENTINKER_REMOTE_ENV_HOSTS: ${allowed.join(", ") || "empty"})`,
          );
      }
      const row = await ctx.db.environment.create({
        data: {
          teamId: ctx.caller.teamId,
          name: input.name,
          kind: input.kind,
          builtin: input.kind === "BUILTIN" ? input.builtin : null,
          url: input.kind === "REMOTE" ? input.url : null,
          config: input.config as object,
        },
      });
      return present(row);
    }),

  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/environments", protect: true, tags: ["environments"] } })
    .input(z.object({}))
    .output(z.array(ZEnvironment))
    .query(async ({ ctx }) =>
      (
        await ctx.db.environment.findMany({
          where: { teamId: ctx.caller.teamId },
          orderBy: { createdAt: "desc" },
        })
      ).map(present),
    ),

  get: teamProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/v1/environments/{environmentId}",
        protect: true,
        tags: ["environments"],
      },
    })
    .input(ZEnvironmentId)
    .output(ZEnvironment)
    .query(async ({ ctx, input }) => {
      const row = await ctx.db.environment.findFirst({
        where: { id: input.environmentId, teamId: ctx.caller.teamId },
      });
      if (!row) notFound("environment", input.environmentId);
      return present(row);
    }),

  delete: teamProcedure
    .meta({
      openapi: {
        method: "DELETE",
        path: "/v1/environments/{environmentId}",
        protect: true,
        tags: ["environments"],
      },
    })
    .input(ZEnvironmentId)
    .output(z.object({ deleted: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      const { count } = await ctx.db.environment.deleteMany({
        where: { id: input.environmentId, teamId: ctx.caller.teamId },
      });
      if (count !== 1) notFound("environment", input.environmentId);
      return { deleted: true as const };
    }),
});
