// The API's procedures called in process through tRPC's createCaller, on the
// real database: the same middlewares, schemas and domain functions as over
// HTTP, without a server. Another team's ids must answer exactly like missing ones.
import { type AppRouter, type Caller, createCaller, createInnerContext } from "@opentinker/api";
import { createApiKey, createTeam, RequestWaiter, registerBaseModel } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { LORA_DEFAULTS } from "@opentinker/protocol";
import type { inferRouterInputs } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

type Inputs = inferRouterInputs<AppRouter>;

const ALLOWED_HOST = "envs.example:8080";
const MISSING = "cmissing000000000000000000";

let t: TestDatabase;
let waiter: RequestWaiter;
let revoked = 0;

async function teamCaller(slug: string) {
  const team = await createTeam(t.db, { slug, name: slug });
  const key = await createApiKey(t.db, team.id, { name: "setup" });
  const caller: Caller = { teamId: team.id, teamSlug: slug, apiKeyId: key.id, sessionId: null };
  const api = createCaller(
    createInnerContext({
      db: t.db,
      waiter,
      caller,
      remoteEnvHosts: [ALLOWED_HOST],
      keyRevoked: () => void revoked++,
    }),
  );
  return { team, key, api };
}

let a: Awaited<ReturnType<typeof teamCaller>>;
let b: Awaited<ReturnType<typeof teamCaller>>;

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

/** What a missing object answers: 404 naming it. */
const missing = (what: string, id: string) => ({ code: "NOT_FOUND", message: `${what} ${id} not found` });

/** Another team's id answers exactly as an id nobody has. */
async function answersLikeMissing(call: (id: string) => Promise<unknown>, what: string, theirs: string) {
  await expect(call(theirs)).rejects.toMatchObject(missing(what, theirs));
  await expect(call(MISSING)).rejects.toMatchObject(missing(what, MISSING));
}

const adapter = (name: string): Inputs["adapters"]["create"] => ({ name, baseModel: "tiny" });

const sftJob = (adapterId: string): Inputs["jobs"]["create"] => ({
  kind: "SFT",
  adapterId,
  config: { conversations: [{ messages: [{ role: "user", content: "hi" }] }], batchSize: 1 },
});

describe("adapters", () => {
  it("are created with the protocol's LoRA defaults and read back by the team", async () => {
    const created = await a.api.adapters.create(adapter("first"));
    expect(created).toMatchObject({ name: "first", baseModel: "tiny", kind: "LORA", ...LORA_DEFAULTS });
    expect(await a.api.adapters.get({ adapterId: created.id })).toEqual(created);
    expect((await a.api.adapters.list({})).map((x) => x.id)).toContain(created.id);
    expect(await a.api.adapters.versions({ adapterId: created.id })).toEqual([]);
    expect(await a.api.adapters.checkpoints({ adapterId: created.id })).toEqual([]);
  });

  it("a FULL adapter has no rank or alpha; an unknown base model is a 400 naming the field", async () => {
    expect(await a.api.adapters.create({ ...adapter("full"), kind: "FULL" })).toMatchObject({
      rank: null,
      alpha: null,
    });
    await expect(a.api.adapters.create({ name: "x", baseModel: "nope" })).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: 'baseModel: unknown base model "nope"',
    });
  });

  it("another team's adapter answers like a missing one, and is left alone", async () => {
    const theirs = await b.api.adapters.create(adapter("theirs"));
    await answersLikeMissing((adapterId) => a.api.adapters.get({ adapterId }), "adapter", theirs.id);
    await answersLikeMissing((adapterId) => a.api.adapters.versions({ adapterId }), "adapter", theirs.id);
    await answersLikeMissing((adapterId) => a.api.adapters.checkpoints({ adapterId }), "adapter", theirs.id);
    await answersLikeMissing((adapterId) => a.api.adapters.delete({ adapterId }), "adapter", theirs.id);
    expect((await a.api.adapters.list({})).map((x) => x.id)).not.toContain(theirs.id);
    expect(await b.api.adapters.get({ adapterId: theirs.id })).toEqual(theirs);
    expect(await b.api.adapters.delete({ adapterId: theirs.id })).toEqual({ deleted: true });
  });

  it("stop at the team's maxAdapters quota with a 429", async () => {
    const quota = await teamCaller("team-quota");
    await t.db.team.update({ where: { id: quota.team.id }, data: { maxAdapters: 1 } });
    await quota.api.adapters.create(adapter("one"));
    await expect(quota.api.adapters.create(adapter("two"))).rejects.toMatchObject({
      code: "TOO_MANY_REQUESTS",
    });
  });
});

describe("environments", () => {
  it("built-in and allowed remote ones are created, read, listed and deleted", async () => {
    const builtin = await a.api.environments.create({
      name: "arith",
      kind: "BUILTIN",
      builtin: "arithmetic",
      config: { maxOperand: 9 },
    });
    expect(builtin).toMatchObject({
      kind: "BUILTIN",
      builtin: "arithmetic",
      url: null,
      config: { maxOperand: 9 },
    });
    const remote = await a.api.environments.create({
      name: "remote",
      kind: "REMOTE",
      url: `http://${ALLOWED_HOST}/env`,
    });
    expect(remote).toMatchObject({ kind: "REMOTE", builtin: null, config: {} });
    expect(await a.api.environments.get({ environmentId: builtin.id })).toEqual(builtin);
    expect((await a.api.environments.list({})).map((e) => e.id)).toEqual([remote.id, builtin.id]);
    expect(await a.api.environments.delete({ environmentId: remote.id })).toEqual({ deleted: true });
    await expect(a.api.environments.get({ environmentId: remote.id })).rejects.toMatchObject(
      missing("environment", remote.id),
    );
  });

  it("a remote host off the operator's allow-list is a 400 naming the url", async () => {
    await expect(
      a.api.environments.create({ name: "evil", kind: "REMOTE", url: "http://evil.example/env" }),
    ).rejects.toMatchObject({
      code: "BAD_REQUEST",
      message: `url: host evil.example is not on the allow-list for remote environments (OPENTINKER_REMOTE_ENV_HOSTS: ${ALLOWED_HOST})`,
    });
  });

  it("another team's environment answers like a missing one", async () => {
    const theirs = await b.api.environments.create({ name: "g", kind: "BUILTIN", builtin: "guess-number" });
    const get = (environmentId: string) => a.api.environments.get({ environmentId });
    await answersLikeMissing(get, "environment", theirs.id);
    const remove = (environmentId: string) => a.api.environments.delete({ environmentId });
    await answersLikeMissing(remove, "environment", theirs.id);
    expect(await b.api.environments.get({ environmentId: theirs.id })).toEqual(theirs);
  });
});

describe("jobs", () => {
  it("are queued, read, cancelled and followed by their team", async () => {
    const { id: adapterId } = await a.api.adapters.create(adapter("sft"));
    const job = await a.api.jobs.create(sftJob(adapterId));
    expect(job).toMatchObject({ adapterId, kind: "SFT", status: "QUEUED", cancelRequested: false });
    expect(await a.api.jobs.get({ jobId: job.id })).toEqual(job);
    expect((await a.api.jobs.list({})).map((j) => j.id)).toContain(job.id);
    expect(await a.api.jobs.metrics({ jobId: job.id })).toEqual([]);
    expect(await a.api.jobs.trajectories({ jobId: job.id, step: 0 })).toEqual([]);
    expect(await a.api.jobs.cancel({ jobId: job.id })).toMatchObject({ id: job.id, cancelRequested: true });
  });

  it("another team's job, adapter or environment answers like a missing one", async () => {
    const { id: theirAdapter } = await b.api.adapters.create(adapter("their-sft"));
    const theirJob = await b.api.jobs.create(sftJob(theirAdapter));
    await answersLikeMissing((jobId) => a.api.jobs.get({ jobId }), "job", theirJob.id);
    await answersLikeMissing((jobId) => a.api.jobs.cancel({ jobId }), "job", theirJob.id);
    await answersLikeMissing((jobId) => a.api.jobs.metrics({ jobId }), "job", theirJob.id);
    await answersLikeMissing((jobId) => a.api.jobs.trajectories({ jobId, step: 0 }), "job", theirJob.id);
    await answersLikeMissing((id) => a.api.jobs.create(sftJob(id)), "adapter", theirAdapter);
    const env = await b.api.environments.create({ name: "e", kind: "BUILTIN", builtin: "arithmetic" });
    const { id: ours } = await a.api.adapters.create(adapter("rl"));
    const rl = (environmentId: string) =>
      a.api.jobs.create({ kind: "RL", adapterId: ours, environmentId, config: { steps: 1 } });
    await answersLikeMissing(rl, "environment", env.id);
    expect(await b.api.jobs.get({ jobId: theirJob.id })).toMatchObject({ cancelRequested: false });
  });
});

describe("API keys", () => {
  it("show their plaintext once, list without it, and revoke (forgetting cached keys)", async () => {
    const created = await a.api.apiKeys.create({ name: "ci" });
    expect(created.key).toMatch(/^ot_/);
    const listed = (await a.api.apiKeys.list({})).find((k) => k.id === created.id);
    expect(listed).toMatchObject({ name: "ci", prefix: created.prefix, revokedAt: null });
    expect(listed).not.toHaveProperty("key");
    const before = revoked;
    expect(await a.api.apiKeys.revoke({ keyId: created.id })).toEqual({ revoked: true });
    expect(revoked).toBe(before + 1);
    await expect(a.api.apiKeys.revoke({ keyId: created.id })).rejects.toMatchObject(
      missing("API key", created.id),
    );
  });

  it("another team's key answers like a missing one and stays live", async () => {
    await answersLikeMissing((keyId) => a.api.apiKeys.revoke({ keyId }), "API key", b.key.id);
    expect((await b.api.apiKeys.list({})).find((k) => k.id === b.key.id)).toMatchObject({ revokedAt: null });
  });
});

it("a caller without a team is refused with 401", async () => {
  const anonymous = createCaller(createInnerContext({ db: t.db, waiter, caller: null }));
  await expect(anonymous.adapters.list({})).rejects.toMatchObject({ code: "UNAUTHORIZED" });
});
