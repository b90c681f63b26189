// What a database needs before web processes and workers use it: the
// migrations, the demo team (its API key and the demo user's password printed
// once) and the base models. `npm start` runs it on every start; a deployment
// runs it once per release (`npm run setup`, deploy/kubernetes/setup-job.yaml).
import { createDb, DEMO_USER_EMAIL, migrate, seed } from "@opentinker/db";
import { baseModels } from "./base-models.ts";

export async function setUpDatabase(
  url: string,
  env: { OPENTINKER_DATA_DIR: string; OPENTINKER_MODELS?: string | undefined },
  say: (line: string) => void,
): Promise<void> {
  const migrated = await migrate(url);
  say(
    migrated.applied.length
      ? `database: applied ${migrated.applied.join(", ")}`
      : "database: schema up to date",
  );
  const db = createDb(url);
  try {
    const seeded = await seed(db, {
      baseModels: await baseModels(env.OPENTINKER_DATA_DIR, env.OPENTINKER_MODELS),
    });
    if (seeded.createdApiKey) say(`demo team's API key (shown once, keep it): ${seeded.createdApiKey}`);
    if (seeded.createdPassword)
      say(`dashboard sign-in (shown once, keep it): ${DEMO_USER_EMAIL} / ${seeded.createdPassword}`);
    say(`base models: ${seeded.baseModels.join(", ")}`);
  } finally {
    await db.$disconnect();
  }
}
