// Environments a team's jobs run: a built-in kind with its config, or a remote
// HTTP environment on a host the operator allowed (OPENTINKER_REMOTE_ENV_HOSTS).
import { createEnvironment, deleteEnvironment, getEnvironment, listEnvironments } from "@opentinker/db";
import {
  type EnvironmentInfo,
  type EnvironmentInput,
  isAllowedRemoteHost,
  ZEnvironment,
  ZEnvironmentInput,
  ZEnvironmentRequest,
} from "@opentinker/protocol";
import { iso } from "../present.ts";
import { deleteProcedure, readProcedures } from "../resource.ts";
import { badRequest, router, teamRoute } from "../trpc.ts";

type Row = Omit<EnvironmentInfo, "config" | "createdAt"> & { config: unknown; createdAt: Date };

const present = ({ id, name, kind, builtin, url, config, createdAt }: Row): EnvironmentInfo => ({
  id,
  name,
  kind,
  builtin,
  url,
  config: (config ?? {}) as Record<string, unknown>,
  createdAt: iso(createdAt),
});

/** A remote environment's host must be on the operator's allow-list. */
function checkRemoteHost(input: EnvironmentInput, allowed: readonly string[]): void {
  if (input.kind !== "REMOTE" || isAllowedRemoteHost(input.url, allowed)) return;
  badRequest(
    `url: host ${new URL(input.url).host} is not on the allow-list for remote environments (OPENTINKER_REMOTE_ENV_HOSTS: ${allowed.join(", ") || "empty"})`,
  );
}

const environments = {
  tag: "environments",
  path: "/v1/environments",
  what: "environment",
  idKey: "environmentId",
} as const;

export const environmentsRouter = router({
  create: teamRoute("POST", "/v1/environments", "environments")
    .input(ZEnvironmentRequest)
    .output(ZEnvironment)
    .mutation(async ({ ctx, input: request }) => {
      const input = ZEnvironmentInput.parse(request);
      checkRemoteHost(input, ctx.remoteEnvHosts);
      const row = await createEnvironment(ctx.db, ctx.caller.teamId, {
        name: input.name,
        kind: input.kind,
        builtin: input.kind === "BUILTIN" ? input.builtin : null,
        url: input.kind === "REMOTE" ? input.url : null,
        config: input.config as object,
      });
      return present(row);
    }),

  ...readProcedures({
    ...environments,
    output: ZEnvironment,
    list: listEnvironments,
    get: getEnvironment,
    present,
  }),

  delete: deleteProcedure(environments, deleteEnvironment),
});
