// The overview's snapshots, called through createCaller on the real database:
// one entry per adapter (its latest version, how many it has, when it last
// published), however many versions one job publishes; only the team's own.
import { createApiKey, createTeam, publishSnapshot, RequestWaiter, registerBaseModel } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { afterAll, beforeAll, expect, it } from "vitest";
import { type Caller, createCaller, createInnerContext } from "../index.ts";

let t: TestDatabase;
let waiter: RequestWaiter;

async function teamCaller(slug: string) {
  const team = await createTeam(t.db, { slug, name: slug });
  const key = await createApiKey(t.db, team.id, { name: "setup" });
  const caller: Caller = { teamId: team.id, teamSlug: slug, apiKeyId: key.id, sessionId: null };
  return { team, api: createCaller(createInnerContext({ db: t.db, waiter, caller })) };
}

beforeAll(async () => {
  t = await createTestDatabase();
  waiter = new RequestWaiter(t.db, t.url);
  await registerBaseModel(t.db, {
    name: "tiny",
    path: "/models/tiny",
    architecture: "LlamaForCausalLM",
    vocabSize: 64,
    contextLength: 128,
  });
});
afterAll(async () => {
  await waiter?.close();
  await t?.drop();
});

it("lists each adapter once with its latest version and count, the most recently published first", async () => {
  const a = await teamCaller("team-a");
  const b = await teamCaller("team-b");
  const publish = async (team: typeof a, adapterId: string, steps: number) => {
    for (let step = 1; step <= steps; step++)
      await publishSnapshot(t.db, team.team.id, {
        adapterId,
        path: `/s/${step}`,
        checksum: "x",
        trainerStep: step,
      });
  };
  const busy = await a.api.adapters.create({ name: "busy", baseModel: "tiny" });
  const quiet = await a.api.adapters.create({ name: "quiet", baseModel: "tiny" });
  const unpublished = await a.api.adapters.create({ name: "unpublished", baseModel: "tiny" });
  const theirs = await b.api.adapters.create({ name: "theirs", baseModel: "tiny" });
  await publish(a, quiet.id, 2);
  await publish(a, busy.id, 12);
  await publish(b, theirs.id, 1);

  const listed = await a.api.adapters.latestVersions({});
  expect(listed.map((e) => [e.adapterName, e.versions, e.latest.version, e.latest.trainerStep])).toEqual([
    ["busy", 12, 12, 12],
    ["quiet", 2, 2, 2],
  ]);
  expect(listed[0]?.lastPublishedAt).toBe(listed[0]?.latest.createdAt);
  expect(listed.map((e) => e.adapterId)).not.toContain(unpublished.id);
  expect((await a.api.adapters.latestVersions({ limit: 1 })).map((e) => e.adapterName)).toEqual(["busy"]);
  expect((await b.api.adapters.latestVersions({})).map((e) => e.adapterName)).toEqual(["theirs"]);
});
