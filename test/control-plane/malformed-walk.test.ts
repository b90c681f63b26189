// Bad input, generated from the OpenAPI document: every mutating operation gets
// a schema-valid body with one field broken at a time (null, a wrong type, a
// number or boolean as a string, out of range, too long, nested too deep,
// missing) and bodies that are no object or too big. Each must be refused
// with a 4xx whose message names the field, and nothing may be written.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ControlPlane, type Team } from "./harness.ts";
import { callsFor, type JsonSchema, type Operation, operationsOf, type References } from "./openapi.ts";
import { objectsOf, quiet, writes } from "./team-objects.ts";

let cp: ControlPlane;
let team: Team;
let mine: References;

beforeAll(async () => {
  cp = await ControlPlane.start();
  team = await cp.team("malformed");
  await cp.startWorker();
  mine = await objectsOf(cp, team);
  await quiet(cp);
}, 120_000);
afterAll(() => cp?.stop());

type Path = (string | number)[];

interface Mutation {
  /** The field it breaks ([] for the whole body). */
  path: Path;
  what: string;
  /** The body with the field replaced, or (for `missing`) removed. */
  body: unknown;
}

/** The union branch a generated value came from (its keys and constants fit). */
function branchOf(schema: JsonSchema, value: unknown): JsonSchema {
  const options = schema.anyOf ?? schema.oneOf;
  if (!options) return schema;
  const fits = (option: JsonSchema) => {
    if (option.type === "object" || option.properties) {
      if (typeof value !== "object" || value === null || Array.isArray(value)) return false;
      const entries = Object.entries(value as Record<string, unknown>);
      return entries.every(([k, v]) => {
        const property = option.properties?.[k];
        return property !== undefined && (property.const === undefined || property.const === v);
      });
    }
    if (option.type === "array") return Array.isArray(value);
    return typeof value === option.type || (option.type === "integer" && typeof value === "number");
  };
  return branchOf(options.find(fits) ?? (options[0] as JsonSchema), value);
}

/** Values no schema of this type accepts. */
function badValues(schema: JsonSchema): { what: string; value: unknown }[] {
  const bad: { what: string; value: unknown }[] = [{ what: "null", value: null }];
  const type = schema.type ?? (schema.properties ? "object" : undefined);
  if (type === "string") {
    bad.push({ what: "a number", value: 12345 });
    if (schema.maxLength !== undefined && schema.maxLength < 100_000)
      bad.push({ what: "too long", value: "x".repeat(schema.maxLength + 1) });
  }
  if (type === "number" || type === "integer") {
    bad.push({ what: "a number as a string", value: "1" }, { what: "a hex string", value: "0x10" });
    bad.push({ what: "a list", value: [1] }, { what: "a boolean", value: true });
    if (schema.minimum !== undefined) bad.push({ what: "below the minimum", value: schema.minimum - 1 });
    if (schema.exclusiveMinimum !== undefined)
      bad.push({ what: "at the exclusive minimum", value: schema.exclusiveMinimum });
    if (schema.maximum !== undefined && schema.maximum < Number.MAX_SAFE_INTEGER)
      bad.push({ what: "above the maximum", value: schema.maximum + 1 });
    if (type === "integer") bad.push({ what: "a fraction", value: 1.5 });
  }
  if (type === "boolean")
    bad.push({ what: "a boolean as a string", value: "false" }, { what: "a number", value: 0 });
  if (type === "array") {
    bad.push({ what: "an object", value: {} });
    if (schema.maxItems !== undefined && schema.maxItems <= 5000)
      bad.push({ what: "too many items", value: Array.from({ length: schema.maxItems + 1 }, () => 0) });
  }
  if (type === "object") bad.push({ what: "a string", value: "x" }, { what: "a list", value: [] });
  if (schema.enum) bad.push({ what: "not one of the options", value: "no-such-option" });
  if (!schema.enum && schema.const === undefined && (schema.anyOf ?? schema.oneOf))
    bad.push({ what: "a number", value: 12345 });
  bad.push({ what: "nested too deep", value: JSON.parse(`${"[".repeat(80)}${"]".repeat(80)}`) });
  return bad;
}

function replaced(body: unknown, path: Path, value: unknown, remove = false): unknown {
  const copy = structuredClone(body) as Record<string | number, unknown>;
  let at: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
  const last = path[path.length - 1] as string | number;
  if (remove) delete at[last];
  else at[last] = value;
  return copy;
}

/** One mutation per bad value of every field (required or not) of the body's branch of its schema. */
function mutations(schema: JsonSchema, body: unknown): Mutation[] {
  const out: Mutation[] = [];
  const visit = (s: JsonSchema, value: unknown, path: Path) => {
    const branch = branchOf(s, value);
    if (path.length > 0)
      for (const { what, value: bad } of badValues(s))
        out.push({ path, what, body: replaced(body, path, bad) });
    if (branch.properties && value && typeof value === "object" && !Array.isArray(value)) {
      for (const [key, property] of Object.entries(branch.properties)) {
        const child = (value as Record<string, unknown>)[key];
        if (child === undefined) {
          for (const { what, value: bad } of badValues(property))
            if (what !== "nested too deep")
              out.push({ path: [...path, key], what, body: replaced(body, [...path, key], bad) });
          continue;
        }
        if (branch.required?.includes(key) && property.default === undefined)
          out.push({
            path: [...path, key],
            what: "missing",
            body: replaced(body, [...path, key], undefined, true),
          });
        visit(property, child, [...path, key]);
      }
    }
    if (branch.type === "array" && Array.isArray(value) && value.length > 0 && branch.items)
      visit(branch.items, value[0], [...path, 0]);
  };
  visit(schema, body, []);
  return out;
}

/** Whether an answer names the field: its message leads with it (or a field around it), or an issue does. */
function namesField(body: { message?: string; issues?: { path: Path }[] }, path: Path): boolean {
  const field = path.join(".");
  const related = (named: string) =>
    named !== "" &&
    named !== "input" &&
    (field === named || field.startsWith(`${named}.`) || named.startsWith(`${field}.`));
  const lead = /^(\S+): /.exec(body.message ?? "")?.[1] ?? "";
  return related(lead) || (body.issues ?? []).some((issue) => related(issue.path.join(".")));
}

const mutatingWithBody = (op: Operation) => op.method === "POST" && op.body !== null;

describe("bad input, generated from the OpenAPI document", () => {
  it("refuses every broken field of every mutating operation by name, and writes nothing", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    const operations = operationsOf(document).filter(mutatingWithBody);
    expect(operations.length).toBeGreaterThan(12);
    let tried = 0;
    for (const op of operations) {
      const [call] = callsFor(op, mine);
      if (!call || !op.body) throw new Error(`${op.method} ${op.path}: no body could be generated`);
      for (const mutation of mutations(op.body, call.body)) {
        const before = await writes(cp);
        const answer = await cp.api<{ message?: string; issues?: { path: Path }[] }>(
          team.key,
          op.method,
          call.route,
          mutation.body,
        );
        const what = `${op.method} ${op.path}: ${mutation.path.join(".")} ${mutation.what}`;
        expect(answer.status, `${what} → ${JSON.stringify(answer.body).slice(0, 200)}`).toBe(400);
        expect(namesField(answer.body, mutation.path), `${what} → ${answer.body.message}`).toBe(true);
        expect(await writes(cp), `${what} wrote something`).toBe(before);
        tried++;
      }
    }
    expect(tried).toBeGreaterThan(400);
  }, 300_000);

  it("refuses bodies that are not an object, or too big, before reading them, on every mutating operation", async () => {
    const document = await (await fetch(`${cp.url}/api/openapi.json`)).json();
    const huge = `{"pad":"${"x".repeat(33 * 1024 * 1024)}"}`;
    for (const op of operationsOf(document).filter(mutatingWithBody)) {
      const [call] = callsFor(op, mine);
      const route = call?.route ?? op.path;
      const before = await writes(cp);
      for (const text of ["[]", "1", "null", '"x"']) {
        const answer = await cp.api<{ message: string }>(team.key, "POST", route, text);
        expect(answer.status, `${route} ${text}`).toBe(400);
        expect(answer.body.message).toMatch(/^body: /);
      }
      const big = await cp.api<{ message: string }>(team.key, "POST", route, huge);
      expect(big.status, route).toBe(413);
      expect(big.body.message).toMatch(/request body is \d+ bytes; the limit is/);
      expect(await writes(cp)).toBe(before);
    }
  }, 120_000);
});
