// The REST API as its own OpenAPI document describes it, for tests generated from
// it: every operation, schema-valid inputs for it, and the fields that name a
// team's objects. A procedure added to the API is covered by these tests
// without editing them; one with a new kind of reference fails until the
// reference is named here.

export interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  oneOf?: JsonSchema[];
  enum?: unknown[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  minLength?: number;
  maxLength?: number;
  minItems?: number;
  maxItems?: number;
  format?: string;
  additionalProperties?: JsonSchema | boolean;
  default?: unknown;
}

interface Parameter {
  name: string;
  in: "path" | "query";
  required?: boolean;
  schema: JsonSchema;
}

export interface Operation {
  method: string;
  /** e.g. `/v1/adapters/{adapterId}` */
  path: string;
  parameters: Parameter[];
  body: JsonSchema | null;
}

/** Every operation of the document. */
export function operationsOf(document: unknown): Operation[] {
  const paths = (document as { paths: Record<string, Record<string, unknown>> }).paths;
  return Object.entries(paths).flatMap(([path, methods]) =>
    Object.entries(methods).map(([method, raw]) => {
      const op = raw as {
        parameters?: Parameter[];
        requestBody?: { content?: { "application/json"?: { schema?: JsonSchema } } };
      };
      return {
        method: method.toUpperCase(),
        path,
        parameters: (op.parameters ?? []).filter((p) => p.in === "path" || p.in === "query"),
        body: op.requestBody?.content?.["application/json"]?.schema ?? null,
      };
    }),
  );
}

/** The fields that name a team-owned object, and what fills them in a generated input. */
export const REFERENCE_FIELDS = [
  "adapterId",
  "environmentId",
  "jobId",
  "requestId",
  "keyId",
  "handle",
  "path",
] as const;
export type ReferenceField = (typeof REFERENCE_FIELDS)[number];
export type References = Record<ReferenceField, string>;

/** Whether a field names an object: one of ours, or a new kind this module must learn. */
function referenceField(name: string): ReferenceField | null {
  if ((REFERENCE_FIELDS as readonly string[]).includes(name)) return name as ReferenceField;
  if (/Id$/.test(name) && name !== "id")
    throw new Error(`field ${name} looks like a reference: add it to REFERENCE_FIELDS`);
  return null;
}

/** Generated inputs never hold more variants than this per operation. */
const MAX_VARIANTS = 64;

function product(options: unknown[][]): unknown[][] {
  let rows: unknown[][] = [[]];
  for (const values of options) {
    rows = rows.flatMap((row) => values.map((v) => [...row, v])).slice(0, MAX_VARIANTS);
  }
  return rows;
}

function numberFor(schema: JsonSchema): number {
  const integer = schema.type === "integer";
  let value =
    schema.minimum ??
    (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + (integer ? 1 : 0.5) : 1);
  if (schema.maximum !== undefined) value = Math.min(value, schema.maximum);
  if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum)
    value = schema.exclusiveMaximum / 2;
  return integer ? Math.ceil(value) : value;
}

/**
 * Schema-valid values for `schema` (as far as JSON Schema says: refinements are
 * not in the document). Every union and every enum of a top-level field gives
 * one variant each; nested enums take their first value. Reference fields take
 * their value from `refs`; optional fields are left out unless they are references.
 */
export function valuesFor(schema: JsonSchema, refs: References, name = "", depth = 0): unknown[] {
  const reference = name ? referenceField(name) : null;
  if (reference && (schema.type === "string" || schema.type === undefined)) return [refs[reference]];
  const union = schema.anyOf ?? schema.oneOf;
  if (union) return union.flatMap((option) => valuesFor(option, refs, name, depth)).slice(0, MAX_VARIANTS);
  if (schema.const !== undefined) return [schema.const];
  if (schema.enum) return depth <= 1 ? schema.enum : [schema.enum[0]];
  switch (schema.type) {
    case "string":
      if (schema.format === "uri") return ["http://127.0.0.1:9/env"];
      return ["x".repeat(Math.max(1, schema.minLength ?? 1))];
    case "number":
    case "integer":
      return [numberFor(schema)];
    case "boolean":
      return [false];
    case "array": {
      const item = valuesFor(schema.items ?? {}, refs, "", depth + 1)[0];
      const length = Math.min(Math.max(schema.minItems ?? 0, 1), schema.maxItems ?? 1);
      return [Array.from({ length }, () => item)];
    }
    default: {
      const properties = Object.entries(schema.properties ?? {}).filter(
        ([key]) => schema.required?.includes(key) || referenceFieldOrNull(key) !== null,
      );
      const rows = product(properties.map(([key, value]) => valuesFor(value, refs, key, depth + 1)));
      return rows.map((row) => Object.fromEntries(properties.map(([key], i) => [key, row[i]])));
    }
  }
}

const referenceFieldOrNull = (name: string): ReferenceField | null => {
  try {
    return referenceField(name);
  } catch {
    return null;
  }
};

/** The reference fields an operation's inputs contain, anywhere. */
export function referencesOf(op: Operation): Set<ReferenceField> {
  const found = new Set<ReferenceField>();
  const walk = (schema: JsonSchema | undefined, name: string) => {
    if (!schema) return;
    const reference = name ? referenceField(name) : null;
    if (reference) found.add(reference);
    for (const [key, value] of Object.entries(schema.properties ?? {})) walk(value, key);
    for (const option of schema.anyOf ?? schema.oneOf ?? []) walk(option, name);
    walk(schema.items, "");
    if (typeof schema.additionalProperties === "object") walk(schema.additionalProperties, "");
  };
  for (const parameter of op.parameters) walk(parameter.schema, parameter.name);
  walk(op.body ?? undefined, "");
  return found;
}

export interface Call {
  method: string;
  /** The route under /api, with path parameters filled and the query string. */
  route: string;
  body?: unknown;
}

/** Every generated call of an operation with these references. */
export function callsFor(op: Operation, refs: References): Call[] {
  const params = op.parameters.filter((p) => p.required || referenceFieldOrNull(p.name));
  const paramValues = product(params.map((p) => valuesFor(p.schema, refs, p.name))).slice(0, 1)[0] ?? [];
  let route = op.path;
  const query = new URLSearchParams();
  params.forEach((p, i) => {
    const value = String(paramValues[i]);
    if (p.in === "path") route = route.replace(`{${p.name}}`, encodeURIComponent(value));
    else query.set(p.name, value);
  });
  if (query.size > 0) route += `?${query.toString()}`;
  const bodies = op.body ? valuesFor(op.body, refs) : [undefined];
  return bodies.map((body) => ({ method: op.method, route, ...(body === undefined ? {} : { body }) }));
}
