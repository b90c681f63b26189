import { randomBytes } from "node:crypto";
import { createApiKey } from "./api-keys.ts";
import { type BaseModelInput, registerBaseModel } from "./base-models.ts";
import type { Db } from "./client.ts";
import { setUserPassword } from "./passwords.ts";

export const DEMO_TEAM_SLUG = "demo";
export const DEMO_USER_EMAIL = "demo@opentinker.local";

/**
 * The demo team's quotas, for the box `npm start` runs: one worker of 4 slots
 * (WORKER_CAPACITY's default) on a few cores. Jobs there hold at most 3 slots
 * (placement.ts keeps one for training calls such as examples/rl-remote.ts),
 * so 3 run at once and the rest wait QUEUED for a slot. 8 queued or running
 * jobs lets a new user start every preset from the dashboard at once (the first
 * hour of issue 44 started 7) without a 429.
 */
export const DEMO_TEAM_QUOTAS = { maxConcurrentJobs: 8 } as const;

export interface SeedOptions {
  /** Built-in base models to register (the engine supplies them as they exist). */
  baseModels?: BaseModelInput[];
}

export interface SeedResult {
  teamId: string;
  /** The demo API key in plaintext, only on the run that created it. */
  createdApiKey: string | null;
  /** The demo user's dashboard password, only on the run that set it. */
  createdPassword: string | null;
  baseModels: string[];
}

/** Idempotent: creates the demo team, user and first API key once. */
export async function seed(db: Db, options: SeedOptions = {}): Promise<SeedResult> {
  const team = await db.team.upsert({
    where: { slug: DEMO_TEAM_SLUG },
    create: { slug: DEMO_TEAM_SLUG, name: "Demo team", ...DEMO_TEAM_QUOTAS },
    update: {},
    select: { id: true },
  });
  const user = await db.user.upsert({
    where: { email: DEMO_USER_EMAIL },
    create: { email: DEMO_USER_EMAIL, name: "Demo user" },
    update: {},
    select: { id: true, passwordHash: true },
  });
  const createdPassword = user.passwordHash ? null : randomBytes(12).toString("base64url");
  if (createdPassword) await setUserPassword(db, user.id, createdPassword);
  await db.membership.upsert({
    where: { teamId_userId: { teamId: team.id, userId: user.id } },
    create: { teamId: team.id, userId: user.id, role: "OWNER" },
    update: {},
  });
  const hasKey = (await db.apiKey.count({ where: { teamId: team.id } })) > 0;
  const created = hasKey ? null : await createApiKey(db, team.id, { name: "demo", createdById: user.id });
  for (const model of options.baseModels ?? []) await registerBaseModel(db, model);
  return {
    teamId: team.id,
    createdApiKey: created?.key ?? null,
    createdPassword,
    baseModels: (options.baseModels ?? []).map((m) => m.name),
  };
}
