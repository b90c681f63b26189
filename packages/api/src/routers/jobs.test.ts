// Job names and the jobs list, called through createCaller on the real
// database: names given or defaulted at creation, and pages of the team's jobs
// in any validated order, with their headline metric. Another team's jobs never
// show, not even in the count.
import { createApiKey, createTeam, RequestWaiter, recordMetrics, registerBaseModel } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { TRPCError } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Caller, createCaller, createInnerContext, publicMessage } from "../index.ts";

let t: TestDatabase;
let waiter: RequestWaiter;

async function teamCaller(slug: string) {
  const team = await createTeam(t.db, { slug, name: slug });
  // Room for every job of a test: none of them runs (there is no worker).
  await t.db.team.update({ where: { id: team.id }, data: { maxConcurrentJobs: 50 } });
  const key = await createApiKey(t.db, team.id, { name: "setup" });
  const caller: Caller = { teamId: team.id, teamSlug: slug, apiKeyId: key.id, sessionId: null };
  return { team, api: createCaller(createInnerContext({ db: t.db, waiter, caller })) };
}

type Team = Awaited<ReturnType<typeof teamCaller>>;
let a: Team;
let b: Team;

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
  a = await teamCaller("team-a");
  b = await teamCaller("team-b");
});
afterAll(async () => {
  await waiter?.close();
  await t?.drop();
});

/** How a refused call reads to a client: its code and the message naming the field. */
async function refusal(call: Promise<unknown>): Promise<{ code: string; message: string }> {
  const error = await call.then(
    () => null,
    (e: unknown) => e,
  );
  if (!(error instanceof TRPCError)) throw new Error(`expected a refusal, got ${String(error)}`);
  return { code: error.code, message: publicMessage(error) };
}

const conversations = [{ messages: [{ role: "user" as const, content: "hi" }] }];

/** An SFT job on a fresh adapter (an adapter trains one job at a time). */
async function sftJob(team: Team, adapterName: string, name?: string) {
  const adapter = await team.api.adapters.create({ name: adapterName, baseModel: "tiny" });
  return team.api.jobs.create({
    kind: "SFT",
    adapterId: adapter.id,
    config: { conversations },
    ...(name === undefined ? {} : { name }),
  });
}

describe("job names", () => {
  it("a job is named by its creator, trimmed, or after its environment and adapter", async () => {
    const env = await a.api.environments.create({ name: "arith", kind: "BUILTIN", builtin: "arithmetic" });
    const adapter = await a.api.adapters.create({ name: "lora-rl", baseModel: "tiny" });
    const rl = await a.api.jobs.create({
      kind: "RL",
      adapterId: adapter.id,
      environmentId: env.id,
      config: { steps: 3 },
    });
    expect(rl.name).toBe("arith · lora-rl");
    expect(await a.api.jobs.get({ jobId: rl.id })).toMatchObject({ name: "arith · lora-rl" });
    expect((await sftJob(a, "lora-sft")).name).toBe("sft · lora-sft");
    expect((await sftJob(a, "lora-named", "  my run  ")).name).toBe("my run");
  });

  it("a blank or over-long name is a 400 naming the field, and nothing is written", async () => {
    const before = (await a.api.jobs.page({})).total;
    for (const name of ["   ", "x".repeat(129)])
      expect(await refusal(sftJob(a, `lora-bad-${name.length}`, name))).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringMatching(/^name: /),
      });
    expect((await a.api.jobs.page({})).total).toBe(before);
  });
});

describe("the jobs list", () => {
  let team: Team;
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    team = await teamCaller("team-list");
    // Created in this order, one after another: created-at order is c, a, d, b (newest first: b, d, a, c).
    for (const name of ["c", "a", "d", "b"]) ids[name] = (await sftJob(team, `lora-${name}`, name)).id;
    const at = (seconds: number) => new Date(Date.UTC(2026, 0, 1, 0, 0, seconds));
    // c ran 30 s, a ran 10 s, d is still running (since a fixed past moment: longest), b never started.
    await t.db.job.update({
      where: { id: ids.c },
      data: { status: "SUCCEEDED", startedAt: at(0), finishedAt: at(30) },
    });
    await t.db.job.update({
      where: { id: ids.a },
      data: { status: "FAILED", startedAt: at(0), finishedAt: at(10) },
    });
    await t.db.job.update({ where: { id: ids.d }, data: { status: "RUNNING", startedAt: at(0) } });
    // Another team's jobs, named to sort among them.
    await sftJob(b, "lora-b-team", "aa");
  });

  const order = async (sort: "name" | "status" | "createdAt" | "duration", direction: "asc" | "desc") =>
    (await team.api.jobs.page({ sort, direction })).jobs.map((job) => job.name);

  it("sorts by name, status, created and duration, either way, with only the team's jobs", async () => {
    expect(await order("name", "asc")).toEqual(["a", "b", "c", "d"]);
    expect(await order("name", "desc")).toEqual(["d", "c", "b", "a"]);
    expect(await order("createdAt", "desc")).toEqual(["b", "d", "a", "c"]);
    expect(await order("createdAt", "asc")).toEqual(["c", "a", "d", "b"]);
    // QUEUED, RUNNING, SUCCEEDED, FAILED: the order a job goes through.
    expect(await order("status", "asc")).toEqual(["b", "d", "c", "a"]);
    // A job that never started has no duration and comes last either way.
    expect(await order("duration", "desc")).toEqual(["d", "c", "a", "b"]);
    expect(await order("duration", "asc")).toEqual(["a", "c", "d", "b"]);
    // The default: newest first.
    expect((await team.api.jobs.page({})).jobs.map((j) => j.name)).toEqual(["b", "d", "a", "c"]);
  });

  it("pages without overlap, counting all the team's jobs", async () => {
    const pages = await Promise.all(
      [1, 2, 3].map((page) => team.api.jobs.page({ sort: "name", direction: "asc", page, pageSize: 3 })),
    );
    expect(pages.map((p) => p.jobs.map((j) => j.name))).toEqual([["a", "b", "c"], ["d"], []]);
    expect(pages.map((p) => [p.total, p.page, p.pageSize])).toEqual([
      [4, 1, 3],
      [4, 2, 3],
      [4, 3, 3],
    ]);
    const theirs = await b.api.jobs.page({ pageSize: 100 });
    expect(theirs.jobs.map((j) => j.name)).toEqual(["aa"]);
    expect(theirs.total).toBe(1);
  });

  it("shows each job's adapter and environment by name and its newest headline metric, validation first", async () => {
    await recordMetrics(t.db, team.team.id, ids.c as string, 0, { "loss/mean": 2 });
    await recordMetrics(t.db, team.team.id, ids.c as string, 1, { "loss/mean": 1.5 });
    await recordMetrics(t.db, team.team.id, ids.a as string, 0, { "loss/mean": 3, "val/loss/mean": 2.5 });
    await recordMetrics(t.db, team.team.id, ids.a as string, 1, { "loss/mean": 2 });
    const jobs = (await team.api.jobs.page({ sort: "name", direction: "asc" })).jobs;
    expect(jobs.map((j) => [j.name, j.adapterName, j.environmentName, j.metric])).toEqual([
      ["a", "lora-a", null, { name: "val/loss/mean", step: 0, value: 2.5 }],
      ["b", "lora-b", null, null],
      ["c", "lora-c", null, { name: "loss/mean", step: 1, value: 1.5 }],
      ["d", "lora-d", null, null],
    ]);
  });

  it("refuses an unknown sort key, direction or page size with a 400 naming it", async () => {
    for (const [input, field] of [
      [{ sort: "id" }, "sort"],
      [{ direction: "up" }, "direction"],
      [{ pageSize: 0 }, "pageSize"],
      [{ page: 0 }, "page"],
    ] as const)
      expect(await refusal(team.api.jobs.page(input as never))).toMatchObject({
        code: "BAD_REQUEST",
        message: expect.stringMatching(new RegExp(`^${field}: `)),
      });
  });
});
