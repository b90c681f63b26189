import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { authenticateApiKey, createApiKey, hashApiKey, listApiKeys, revokeApiKey } from "./api-keys.ts";
import { createTeam } from "./teams.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t.drop());

describe("api keys", () => {
  it("are stored only as a hash and a display prefix", async () => {
    const team = await createTeam(t.db, { slug: "keys", name: "Keys" });
    const created = await createApiKey(t.db, team.id, { name: "ci" });
    expect(created.key).toMatch(/^ot_[A-Za-z0-9_-]{43}$/);
    expect(created.key.startsWith(created.prefix)).toBe(true);

    // No column of any api key row, read raw, holds the key or its secret part.
    const rows = await t.db.$queryRawUnsafe<Record<string, unknown>[]>(`SELECT * FROM "ApiKey"`);
    const secret = created.key.slice(created.prefix.length);
    for (const row of rows) {
      for (const value of Object.values(row)) {
        expect(String(value)).not.toContain(secret);
      }
    }
    expect(rows[0]?.keyHash).toBe(hashApiKey(created.key));
    expect(Object.keys((await listApiKeys(t.db, team.id))[0] ?? {})).not.toContain("keyHash");
  });

  it("authenticate the team, and stop working once revoked", async () => {
    const team = await createTeam(t.db, { slug: "auth", name: "Auth" });
    const created = await createApiKey(t.db, team.id, { name: "ci" });
    expect(await authenticateApiKey(t.db, created.key)).toEqual({
      teamId: team.id,
      teamSlug: "auth",
      apiKeyId: created.id,
    });
    expect(await authenticateApiKey(t.db, `${created.key}x`)).toBeNull();
    expect(await authenticateApiKey(t.db, "not-a-key")).toBeNull();
    expect(await revokeApiKey(t.db, team.id, created.id)).toBe(true);
    expect(await authenticateApiKey(t.db, created.key)).toBeNull();
  });
});
