import type { DbTx } from "./client.ts";
import type { Role } from "./generated/prisma/client.ts";
import { teamSelect, userSelect } from "./selects.ts";

export function createTeam(db: DbTx, input: { slug: string; name: string }) {
  return db.team.create({ data: input, select: teamSelect });
}

export function getTeam(db: DbTx, teamId: string) {
  return db.team.findUnique({ where: { id: teamId }, select: teamSelect });
}

export function createUser(db: DbTx, input: { email: string; name: string; passwordHash?: string }) {
  return db.user.create({ data: input, select: userSelect });
}

export function addMember(db: DbTx, teamId: string, userId: string, role: Role = "MEMBER") {
  return db.membership.create({ data: { teamId, userId, role }, select: { id: true, role: true } });
}

/** The teams a user belongs to (for the dashboard's team switcher). */
export function teamsOfUser(db: DbTx, userId: string) {
  return db.team.findMany({
    where: { memberships: { some: { userId } } },
    select: teamSelect,
    orderBy: { name: "asc" },
  });
}
