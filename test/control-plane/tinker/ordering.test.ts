// Issue 44: seq_id ordering on the Tinker front, over HTTP against the real
// server and a worker. A call held above a seq_id that never comes expires with
// an error naming it; a call answered with an error leaves nothing behind and
// runs only when it is sent again.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "../harness.ts";
import { bindTinker, createModel, createSession, fwdBwdProto, keyOf, PROTOBUF, sftDatum } from "./client.ts";

let cp: ControlPlane;
let team: Team;
let sessionId = "";
const { tinker, result } = bindTinker(() => cp);
const expiry = process.env.TINKER_CALL_EXPIRY_MS;

beforeAll(async () => {
  // Read at each call by the web side (in this process).
  process.env.TINKER_CALL_EXPIRY_MS = "1500";
  cp = await ControlPlane.start();
  team = await cp.team("ordering");
  await cp.startWorker();
  sessionId = await createSession(cp, keyOf(team));
}, 60_000);
afterAll(async () => {
  if (expiry === undefined) delete process.env.TINKER_CALL_EXPIRY_MS;
  else process.env.TINKER_CALL_EXPIRY_MS = expiry;
  await cp?.stop();
});

const send = (model: string, seq: number, tokens = [1, 2, 3, 4]) =>
  tinker<{ request_id: string; detail: string }>(keyOf(team), "forward_backward", undefined, {
    protobufBody: fwdBwdProto({ model_id: model, seq_id: seq, data: [sftDatum(tokens)] }),
  });

const requestsOf = (model: string) => cp.t.db.request.count({ where: { adapterId: model } });

describe("Tinker calls held for a seq_id that never comes", () => {
  it("fail after the expiry as a user error naming it; none runs, the late one is refused, the next runs", async () => {
    const model = await createModel(cp, keyOf(team), BASE, sessionId);
    const held = [await send(model, 2), await send(model, 3)];
    expect(held.map((h) => h.status)).toEqual([200, 200]);
    for (const [i, h] of held.entries()) {
      const failed = await result<{ error: string; category: string }>(keyOf(team), h.body.request_id);
      expect(failed.body).toEqual({
        error: `seq_id 1 of model ${model} did not come within 1.5 s; this call (seq_id ${i + 2}) follows it, so it was not run`,
        category: "user",
      });
    }
    const late = await send(model, 1);
    expect(late.status).toBe(409);
    expect(late.body.detail).toMatch(/seq_id 1 of model .* came after seq_id 3 was settled/);
    expect(await requestsOf(model)).toBe(0);
    // The model is not stuck: the next call runs.
    const next = await send(model, 4);
    expect(next.status).toBe(200);
    expect((await result(keyOf(team), next.body.request_id, true)).type).toBe(PROTOBUF);
    expect(await requestsOf(model)).toBe(1);
  }, 60_000);
});

describe("Tinker calls answered with an error", () => {
  it("never run: refused as busy, a call runs only once sent again; a bad call is refused at once, the next goes on", async () => {
    const model = await createModel(cp, keyOf(team), BASE, sessionId);
    const held = await send(model, 2);
    expect(held.status).toBe(200);
    // A bad call is refused when it comes, even while it would wait (its seq_id is kept, so later calls go on).
    const bad = await send(model, 3, [1, 1_000_000]);
    expect(bad.status).toBe(400);
    expect(bad.body.detail).toMatch(/token id \d+ is out of range/);
    // The team's queue is full: seq_id 1 is refused (429) and withdrawn.
    await cp.t.db.team.update({ where: { id: team.id }, data: { maxQueuedRequests: 0 } });
    const busy = await send(model, 1);
    expect(busy.status).toBe(429);
    expect(await cp.t.db.tinkerCall.count({ where: { adapterId: model, seqId: 1 } })).toBe(0);
    expect(await requestsOf(model)).toBe(0);
    // Room again; the SDK sends the call again: it runs, then the held one, once each.
    await cp.t.db.team.update({ where: { id: team.id }, data: { maxQueuedRequests: 1000 } });
    const again = await send(model, 1);
    expect(again.status).toBe(200);
    for (const id of [again.body.request_id, held.body.request_id])
      expect((await result(keyOf(team), id, true)).type).toBe(PROTOBUF);
    expect(await requestsOf(model)).toBe(2);
    // The bad call never ran; the next call runs after it.
    const next = await send(model, 4);
    expect((await result(keyOf(team), next.body.request_id, true)).type).toBe(PROTOBUF);
    expect(await requestsOf(model)).toBe(3);
  }, 60_000);
});
