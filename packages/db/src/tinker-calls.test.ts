import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { makeTeamWithAdapter } from "./fixtures.test-helpers.ts";
import { enqueueTrainingRequest } from "./requests.ts";
import { createTestDatabase, type TestDatabase } from "./testing/index.ts";
import { pollTinkerCall, submitTinkerCall, tinkerCallId } from "./tinker-calls.ts";
import { registerWorker } from "./workers.ts";

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
  await registerWorker(t.db, { host: "h", pid: 1, capacity: 64, loadedModels: ["test/tiny"] });
});
afterAll(() => t.drop());
afterEach(() => {
  delete process.env.TINKER_CALL_EXPIRY_MS;
});

const fwdBwd = (adapterId: string, seqId: number) => ({
  adapterId,
  seqId,
  kind: "FORWARD_BACKWARD" as const,
  checked: { payload: { adapterId, chunk: seqId } },
});

const badInput = { status: 400, message: "data.0: token id 99 is out of range" };

/** The adapter's requests in the order they run (seq), each with the seq_id its id names. */
async function requestsOf(adapterId: string) {
  const rows = await t.db.request.findMany({
    where: { adapterId },
    orderBy: { seq: "asc" },
    select: { id: true },
  });
  return rows.map((r) => Number(r.id.slice(tinkerCallId(adapterId, 0).length - 1)));
}

describe("Tinker calls in seq_id order", () => {
  it("queues 16 calls sent last-first, each sent twice at once, as 16 Requests in seq_id order", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "burst");
    const seqIds = Array.from({ length: 16 }, (_, i) => 16 - i);
    const answers = await Promise.all(
      [...seqIds, ...seqIds].map((seq) => submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, seq))),
    );
    expect(answers).toEqual([...seqIds, ...seqIds].map((seq) => ({ future: tinkerCallId(adapter.id, seq) })));
    expect(await requestsOf(adapter.id)).toEqual(seqIds.toReversed());
    // Sent again once queued: the same future, nothing queued again.
    expect(await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 7))).toEqual({
      future: tinkerCallId(adapter.id, 7),
    });
    expect(await t.db.request.count({ where: { adapterId: adapter.id } })).toBe(16);
  });

  it("withdraws a call it answers with a refusal: nothing of it stays or runs, and sent again it runs once", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "refused");
    // No worker online: placing the adapter is refused as busy (503).
    await t.db.worker.updateMany({ data: { status: "OFFLINE" } });
    const held = await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 2));
    expect(held).toEqual({ future: tinkerCallId(adapter.id, 2) });
    const refused = await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 1));
    expect(refused).toMatchObject({ refused: { status: 503 } });
    expect(await t.db.tinkerCall.count({ where: { adapterId: adapter.id, seqId: 1 } })).toBe(0);
    // A worker comes; still the withdrawn call's Request can never be written, whoever tries.
    await t.db.worker.updateMany({ data: { status: "ONLINE", heartbeatAt: new Date() } });
    await expect(
      enqueueTrainingRequest(t.db, team.id, {
        adapterId: adapter.id,
        kind: "FORWARD_BACKWARD",
        payload: {},
        requestId: tinkerCallId(adapter.id, 1),
      }),
    ).rejects.toThrow(/already queued, refused, expired or withdrawn/);
    expect(await t.db.request.count({ where: { adapterId: adapter.id } })).toBe(0);
    // The SDK sends the refused call again: both run, in order, once.
    expect(await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 1))).toEqual({
      future: tinkerCallId(adapter.id, 1),
    });
    expect(await requestsOf(adapter.id)).toEqual([1, 2]);
  });

  it("refuses a bad call at once even when it came early; its turn settles it, and the calls after it run", async () => {
    const { team, adapter } = await makeTeamWithAdapter(t.db, "bad-early");
    const bad = { ...fwdBwd(adapter.id, 2), checked: { refusal: badInput } };
    expect(await submitTinkerCall(t.db, team.id, bad)).toEqual({ refused: badInput });
    expect(await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 3))).toEqual({
      future: tinkerCallId(adapter.id, 3),
    });
    expect(await requestsOf(adapter.id)).toEqual([]);
    await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 1));
    expect(await requestsOf(adapter.id)).toEqual([1, 3]);
    // Sent again, the bad call gets its refusal again, whatever this send's check said.
    expect(await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 2))).toEqual({ refused: badInput });
    expect(await requestsOf(adapter.id)).toEqual([1, 3]);
  });

  it("fails calls held above a missing seq_id past the expiry, naming it; none of them runs", async () => {
    process.env.TINKER_CALL_EXPIRY_MS = "300";
    const { team, adapter } = await makeTeamWithAdapter(t.db, "expiry");
    for (const seq of [2, 3]) await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, seq));
    expect(await pollTinkerCall(t.db, team.id, tinkerCallId(adapter.id, 3))).toEqual({
      waiting: "predecessor",
    });
    await new Promise((r) => setTimeout(r, 400));
    for (const seq of [3, 2])
      expect(await pollTinkerCall(t.db, team.id, tinkerCallId(adapter.id, seq))).toEqual({
        refused: {
          status: 409,
          message: `seq_id 1 of model ${adapter.id} did not come within 0.3 s; this call (seq_id ${seq}) follows it, so it was not run`,
        },
      });
    // The missing call comes too late; the next one runs.
    const late = await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 1));
    expect(late).toMatchObject({
      refused: { status: 409, message: expect.stringMatching(/came after seq_id 3/) },
    });
    expect(await t.db.tinkerCall.count({ where: { adapterId: adapter.id, seqId: 1 } })).toBe(0);
    expect(await submitTinkerCall(t.db, team.id, fwdBwd(adapter.id, 4))).toEqual({
      future: tinkerCallId(adapter.id, 4),
    });
    expect(await requestsOf(adapter.id)).toEqual([4]);
  });

  it("answers another team's model and call as missing ones", async () => {
    const a = await makeTeamWithAdapter(t.db, "mine");
    const b = await makeTeamWithAdapter(t.db, "theirs");
    await expect(submitTinkerCall(t.db, a.team.id, fwdBwd(b.adapter.id, 1))).rejects.toThrow(/not found/);
    await submitTinkerCall(t.db, b.team.id, fwdBwd(b.adapter.id, 2));
    expect(await pollTinkerCall(t.db, a.team.id, tinkerCallId(b.adapter.id, 2))).toBeNull();
  });
});
