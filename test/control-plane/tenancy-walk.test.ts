// Tenancy, generated from the OpenAPI document: every REST operation is called
// as team B with team A's ids and handles (each reference of A's alone, the
// rest B's own, and all of them A's) and must answer exactly as it answers for
// an object that does not exist (404 wherever the rest of the call is valid),
// writing nothing. Operations that name no object must show B none of A's.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlPlane, type Team } from "./harness.ts";
import {
  type Call,
  callsFor,
  type Operation,
  operationsOf,
  REFERENCE_FIELDS,
  type ReferenceField,
  type References,
  referencesOf,
} from "./openapi.ts";
import { objectsOf, quiet, teamFingerprint, writes } from "./team-objects.ts";

let cp: ControlPlane;
let a: Team;
let b: Team;
let theirs: References;
let mine: References;
let unknown: References;

beforeAll(async () => {
  cp = await ControlPlane.start();
  a = await cp.team("walk-a");
  b = await cp.team("walk-b");
  await cp.startWorker();
  theirs = await objectsOf(cp, a);
  mine = await objectsOf(cp, b);
  await quiet(cp);
  // Well-formed names of objects that exist nowhere.
  unknown = {
    adapterId: "cunknownadapter00000000000",
    environmentId: "cunknownenvironment0000000",
    jobId: "cunknownjob000000000000000",
    requestId: "00000000-0000-4000-8000-000000000000",
    keyId: "cunknownkey000000000000000",
    handle: `opentinker://${a.slug}/cunknownadapter00000000000/sampler/1`,
    path: `opentinker://${a.slug}/cunknownadapter00000000000/state/s1`,
  };
}, 120_000);
afterAll(() => cp?.stop());

/** A call's answer with the names it was given replaced, so two answers can be compared. */
function normalized(response: { status: number; body: unknown }, names: string[]): string {
  let text = JSON.stringify(response.body);
  for (const name of names) text = text.split(JSON.stringify(name).slice(1, -1)).join("<ref>");
  return `${response.status} ${text}`;
}

const send = (key: string, call: Call) => cp.api(key, call.method, call.route, call.body);

/** Whether a generated call names one of these references of team A's (a union's other branch may not). */
const names = (call: Call, fields: ReferenceField[]) =>
  fields.some((f) =>
    [theirs[f], encodeURIComponent(theirs[f])].some((n) => JSON.stringify(call).includes(n)),
  );

/**
 * Calls an operation as team B with these references of team A's (the rest B's
 * own) and with unknown ones in their place: the answers must match, refuse the
 * call, and write nothing. True when one of them was a 404.
 */
async function walk(op: Operation, foreign: ReferenceField[]): Promise<boolean> {
  const assign = (values: References): References => ({
    ...mine,
    ...Object.fromEntries(foreign.map((f) => [f, values[f]])),
  });
  const unknownCalls = callsFor(op, assign(unknown));
  let notFound = false;
  for (const [i, call] of callsFor(op, assign(theirs)).entries()) {
    if (!names(call, foreign)) continue;
    const written = await writes(cp);
    const answer = await send(b.key, call);
    const missing = await send(b.key, unknownCalls[i] as Call);
    const what = `${op.method} ${op.path} with ${foreign.join(", ")} of team A: ${JSON.stringify(call.body ?? {}).slice(0, 160)}`;
    expect(answer.status, `${what} → ${JSON.stringify(answer.body)}`).toBeGreaterThanOrEqual(400);
    expect(answer.status, what).toBeLessThan(500);
    const replaced = foreign.flatMap((f) => [theirs[f], unknown[f]]);
    expect(normalized(answer, replaced), what).toBe(normalized(missing, replaced));
    expect(await writes(cp), `${what} wrote something`).toBe(written);
    if (answer.status === 404) notFound = true;
  }
  return notFound;
}

describe("tenancy, generated from the OpenAPI document", () => {
  it("answers every operation given another team's objects as if they did not exist, and writes nothing", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    const before = await teamFingerprint(cp, a.id);
    const covered: string[] = [];
    const uncovered: string[] = [];
    for (const op of operationsOf(document)) {
      const fields = [...referencesOf(op)];
      if (fields.length === 0) continue;
      // All of A's, and each of A's alone beside B's own.
      const assignments: ReferenceField[][] = [fields, ...(fields.length > 1 ? fields.map((f) => [f]) : [])];
      let notFound = false;
      for (const foreign of assignments) if (await walk(op, foreign)) notFound = true;
      (notFound ? covered : uncovered).push(`${op.method} ${op.path}`);
    }
    // Each operation was reached past its schema at least once, so its own lookup answered.
    expect(uncovered).toEqual([]);
    expect(covered.length).toBeGreaterThan(15);
    expect(await teamFingerprint(cp, a.id)).toBe(before);
  }, 120_000);

  it("shows a team none of another team's objects where it names none", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    const before = await teamFingerprint(cp, a.id);
    const names = REFERENCE_FIELDS.map((f) => theirs[f]);
    for (const op of operationsOf(document)) {
      if (referencesOf(op).size > 0) continue;
      for (const call of callsFor(op, mine)) {
        const answer = await send(b.key, call);
        const what = `${op.method} ${op.path}`;
        expect(answer.status, `${what} → ${JSON.stringify(answer.body)}`).toBeLessThan(500);
        const text = JSON.stringify(answer.body);
        for (const theirName of names) expect(text, what).not.toContain(theirName);
        expect(text, what).not.toContain(a.slug);
      }
    }
    expect(await teamFingerprint(cp, a.id)).toBe(before);
  }, 60_000);
});
