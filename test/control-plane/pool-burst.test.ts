// Issue 44: one team's burst on the Tinker front, with the real pool (the
// default DATABASE_POOL_SIZE of 10, a team's share half of it). Team B sends the
// 16 chunks of a batch at once (seq_ids 16…1, each sent twice, as the SDK resends
// a call whose answer it lost) and creates 12 models and trains each at once,
// polling every future; meanwhile team A's calls are answered within a second,
// every one of B's calls succeeds, and each chunk runs once.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, type Team } from "./harness.ts";
import {
  bindTinker,
  createModel,
  createSession,
  fwdBwdProto,
  keyOf,
  PROTOBUF,
  sftDatum,
} from "./tinker/client.ts";

let cp: ControlPlane;
let a: Team;
let b: Team;
let sessionB = "";
const { tinker, result } = bindTinker(() => cp);

beforeAll(async () => {
  cp = await ControlPlane.start();
  a = await cp.team("pool-a");
  b = await cp.team("pool-b");
  // Slots for all of B's models: this test is about the database pool, not worker slots.
  await cp.startWorker({ WORKER_CAPACITY: "16" });
  sessionB = await createSession(cp, keyOf(b));
}, 60_000);
afterAll(() => cp?.stop());

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A forward_backward of team B, sent again as the SDK does while the answer says to retry (429, 503). */
async function chunk(model: string, seq: number) {
  const body = fwdBwdProto({ model_id: model, seq_id: seq, data: [sftDatum([1, 2, 3, 4, 5, 6, seq % 7])] });
  for (let attempt = 0; ; attempt++) {
    const answer = await tinker<{ request_id: string; detail?: string }>(
      keyOf(b),
      "forward_backward",
      undefined,
      {
        protobufBody: body,
      },
    );
    if ((answer.status !== 429 && answer.status !== 503) || attempt === 50) return answer;
    await sleep(200);
  }
}

/** The time one call of team A takes to be answered, checking it succeeded. */
async function timed(run: () => Promise<{ status: number }>): Promise<number> {
  const started = performance.now();
  const answer = await run();
  expect(answer.status).toBe(200);
  return performance.now() - started;
}

describe("a team's burst on the Tinker front", () => {
  it("leaves another team answered within a second; every chunk succeeds and runs exactly once", async () => {
    const model = await createModel(cp, keyOf(b), BASE, sessionB);
    let bursting = true;
    const chunks = (async () => {
      const seqIds = Array.from({ length: 16 }, (_, i) => 16 - i);
      const answers = await Promise.all([...seqIds, ...seqIds].map((seq) => chunk(model, seq)));
      for (const answer of answers) expect(answer.status, JSON.stringify(answer.body)).toBe(200);
      const outcomes = await Promise.all(answers.map((x) => result(keyOf(b), x.body.request_id, true)));
      return { seqIds, answers, outcomes };
    })();
    const newModels = Promise.all(
      Array.from({ length: 12 }, async () => {
        const id = await createModel(cp, keyOf(b), BASE, sessionB);
        const first = await chunk(id, 1);
        expect(first.status, JSON.stringify(first.body)).toBe(200);
        return { first, outcome: await result(keyOf(b), first.body.request_id, true) };
      }),
    );
    const burst = Promise.allSettled([chunks, newModels]).finally(() => {
      bursting = false;
    });

    const latencies: number[] = [];
    await sleep(20);
    while (bursting) {
      latencies.push(await timed(() => cp.api(a.key, "GET", "/v1/adapters")));
      latencies.push(
        await timed(() =>
          cp.api(a.key, "POST", "/v1/sampling/sample", {
            policy: { baseModel: BASE },
            prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
            params: { maxTokens: 1 },
          }),
        ),
      );
      await sleep(50);
    }
    await burst;
    expect(latencies.length).toBeGreaterThanOrEqual(4);
    expect(Math.max(...latencies)).toBeLessThan(1_000);
    // Every call of B answered 200 (checked as they came) and its future succeeded.
    const { seqIds, answers, outcomes } = await chunks;
    const created = await newModels;
    for (const outcome of [...outcomes, ...created.map((m) => m.outcome)])
      expect(outcome.type, JSON.stringify(outcome.body)).toBe(PROTOBUF);
    // A chunk sent twice is one call: the same future, and one FORWARD_BACKWARD for each seq_id, in seq_id order.
    const futures = answers.map((x) => x.body.request_id);
    expect(futures.slice(0, 16)).toEqual(futures.slice(16));
    expect(new Set(futures).size).toBe(16);
    const requests = await cp.t.db.request.findMany({
      where: { adapterId: model, kind: "FORWARD_BACKWARD" },
      orderBy: { seq: "asc" },
      select: { id: true, status: true },
    });
    expect(requests.map((r) => r.id)).toEqual(seqIds.toReversed().map((seq) => futures[seqIds.indexOf(seq)]));
    expect(requests.every((r) => r.status === "SUCCEEDED")).toBe(true);
    // Sent again after it ran: the same future, nothing run again.
    const again = await chunk(model, 5);
    expect(again.body.request_id).toBe(futures[seqIds.indexOf(5)]);
    expect(await cp.t.db.request.count({ where: { adapterId: model, kind: "FORWARD_BACKWARD" } })).toBe(16);
  }, 240_000);
});
