// Environments a team's jobs run: a built-in kind with its config, or a remote
// HTTP environment (the API checks its host against the operator's allow-list).
import type { DbTx } from "./client.ts";
import type { EnvironmentKind, Prisma } from "./generated/prisma/client.ts";
import { environmentSelect } from "./selects.ts";

export interface CreateEnvironmentInput {
  name: string;
  kind: EnvironmentKind;
  /** BUILTIN: the built-in kind; REMOTE: null. */
  builtin: string | null;
  /** REMOTE: the reset/step endpoint; BUILTIN: null. */
  url: string | null;
  config: Prisma.InputJsonValue;
}

export function createEnvironment(db: DbTx, teamId: string, input: CreateEnvironmentInput) {
  return db.environment.create({ data: { ...input, teamId }, select: environmentSelect });
}

export function listEnvironments(db: DbTx, teamId: string) {
  return db.environment.findMany({
    where: { teamId },
    select: environmentSelect,
    orderBy: { createdAt: "desc" },
  });
}

export function getEnvironment(db: DbTx, teamId: string, environmentId: string) {
  return db.environment.findFirst({ where: { id: environmentId, teamId }, select: environmentSelect });
}

/** Deletes an environment of this team; false when there is none. */
export async function deleteEnvironment(db: DbTx, teamId: string, environmentId: string): Promise<boolean> {
  const { count } = await db.environment.deleteMany({ where: { id: environmentId, teamId } });
  return count === 1;
}
