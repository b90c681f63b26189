// What was done to a team's saved weights, for the team to read back (the
// Tinker protocol's audit log). Written in the transaction of the change.
import type { DbTx } from "./client.ts";

export interface AuditEventInput {
  event: string;
  modelId?: string | null;
  tinkerPath?: string | null;
  purpose?: string | null;
}

export async function recordAuditEvent(db: DbTx, teamId: string, e: AuditEventInput): Promise<void> {
  await db.auditEvent.create({
    data: {
      teamId,
      event: e.event,
      modelId: e.modelId ?? null,
      tinkerPath: e.tinkerPath ?? null,
      purpose: e.purpose ?? null,
    },
    select: { id: true },
  });
}

/** The team's events in [from, to), oldest first. */
export function listAuditEvents(db: DbTx, teamId: string, from: Date, to: Date) {
  return db.auditEvent.findMany({
    where: { teamId, at: { gte: from, lt: to } },
    select: { at: true, event: true, modelId: true, tinkerPath: true, purpose: true },
    orderBy: [{ at: "asc" }, { id: "asc" }],
  });
}
