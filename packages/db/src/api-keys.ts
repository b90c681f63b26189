import { createHash, randomBytes } from "node:crypto";
import type { DbTx } from "./client.ts";
import { apiKeySelect } from "./selects.ts";

const KEY_PREFIX = "ot_";
// Shown in lists so a user can tell keys apart: "ot_" plus 8 characters.
const DISPLAY_PREFIX_LENGTH = KEY_PREFIX.length + 8;

/** API keys are 256-bit random tokens, so a plain SHA-256 is a sufficient hash. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export interface CreatedApiKey {
  id: string;
  name: string;
  prefix: string;
  /** The plaintext key: returned once, never stored. */
  key: string;
}

export async function createApiKey(
  db: DbTx,
  teamId: string,
  input: { name: string; createdById?: string },
): Promise<CreatedApiKey> {
  const key = KEY_PREFIX + randomBytes(32).toString("base64url");
  const row = await db.apiKey.create({
    data: {
      teamId,
      name: input.name,
      createdById: input.createdById ?? null,
      prefix: key.slice(0, DISPLAY_PREFIX_LENGTH),
      keyHash: hashApiKey(key),
    },
    select: { id: true, name: true, prefix: true },
  });
  return { ...row, key };
}

export function listApiKeys(db: DbTx, teamId: string) {
  return db.apiKey.findMany({ where: { teamId }, select: apiKeySelect, orderBy: { createdAt: "desc" } });
}

/** Revokes a key of this team; false when the team has no such key. */
export async function revokeApiKey(db: DbTx, teamId: string, id: string): Promise<boolean> {
  const { count } = await db.apiKey.updateMany({
    where: { id, teamId, revokedAt: null },
    data: { revokedAt: new Date() },
  });
  return count === 1;
}

/** How stale lastUsedAt may get: refreshing it on every call would add a write to each request. */
const LAST_USED_GRANULARITY_MS = 60_000;

/** The team a presented key belongs to, or null for unknown and revoked keys. */
export async function authenticateApiKey(
  db: DbTx,
  key: string,
): Promise<{ teamId: string; teamSlug: string; apiKeyId: string } | null> {
  if (!key.startsWith(KEY_PREFIX)) return null;
  const row = await db.apiKey.findUnique({
    where: { keyHash: hashApiKey(key) },
    select: { id: true, teamId: true, revokedAt: true, lastUsedAt: true, team: { select: { slug: true } } },
  });
  if (!row || row.revokedAt) return null;
  const now = Date.now();
  if (!row.lastUsedAt || now - row.lastUsedAt.getTime() > LAST_USED_GRANULARITY_MS)
    await db.apiKey.update({ where: { id: row.id }, data: { lastUsedAt: new Date(now) } });
  return { teamId: row.teamId, teamSlug: row.team.slug, apiKeyId: row.id };
}

/** The team of a live key by its id (a token minted for the key names it), or null when unknown or revoked. */
export async function apiKeyCaller(
  db: DbTx,
  apiKeyId: string,
): Promise<{ teamId: string; teamSlug: string; apiKeyId: string } | null> {
  const row = await db.apiKey.findFirst({
    where: { id: apiKeyId, revokedAt: null },
    select: { id: true, teamId: true, team: { select: { slug: true } } },
  });
  return row && { teamId: row.teamId, teamSlug: row.team.slug, apiKeyId: row.id };
}

/** The email of whoever created this team's key (null for keys made by a script or the seed). */
export async function apiKeyCreatorEmail(db: DbTx, teamId: string, apiKeyId: string): Promise<string | null> {
  const row = await db.apiKey.findFirst({
    where: { id: apiKeyId, teamId },
    select: { createdBy: { select: { email: true } } },
  });
  return row?.createdBy?.email ?? null;
}
