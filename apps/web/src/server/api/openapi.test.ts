// The OpenAPI document types a job's config per kind, with the fields the
// schemas accept, in what a client sends and in what it reads back.
import { describe, expect, it } from "vitest";
import { openApiDocument } from "./rest.ts";

interface Schema {
  title?: string;
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  items?: Schema;
  const?: unknown;
}

// As a client reads it: the JSON served at /api/openapi.json.
const doc: {
  paths: Record<string, Record<string, { requestBody?: unknown; responses: Record<string, unknown> }>>;
} = JSON.parse(JSON.stringify(openApiDocument("http://localhost/api")));
const json = (content: unknown): Schema =>
  (content as { content: { "application/json": { schema: Schema } } }).content["application/json"].schema;

/** A job schema's variant for one kind: `kind` is that constant. */
function variant(job: Schema, kind: string): Schema {
  const found = job.oneOf?.find((v) => v.properties?.kind?.const === kind);
  if (!found) throw new Error(`no ${kind} variant in ${JSON.stringify(job).slice(0, 200)}`);
  return found;
}

describe("the OpenAPI document's jobs", () => {
  it("a created or read job is one object per kind, whose config has that kind's real fields", () => {
    for (const job of [
      json(doc.paths["/v1/jobs/{jobId}"]?.get?.responses["200"]),
      json(doc.paths["/v1/jobs"]?.post?.responses["200"]),
      json(doc.paths["/v1/job-list"]?.get?.responses["200"]).properties?.jobs?.items as Schema,
    ]) {
      expect(job.oneOf?.map((v) => v.properties?.kind?.const)).toEqual(["RL", "SFT", "EVAL"]);
      const rl = variant(job, "RL").properties?.config;
      expect(rl?.properties?.validation?.properties).toHaveProperty("every");
      expect(rl?.properties?.validation?.properties).toHaveProperty("groups");
      expect(rl?.required).toContain("steps");
      expect(variant(job, "SFT").properties?.config?.properties).toHaveProperty("conversations");
      expect(variant(job, "EVAL").properties?.config?.properties).toHaveProperty("handle");
      expect(variant(job, "RL").properties).toHaveProperty("name");
    }
  });

  it("a job's creation takes its name and a config typed per kind, validation under the RL one", () => {
    const body = json(doc.paths["/v1/jobs"]?.post?.requestBody);
    expect(body.properties).toHaveProperty("name");
    const configs = body.properties?.config?.anyOf ?? [];
    expect(configs.map((c) => c.title)).toEqual([
      "config of kind RL",
      "config of kind SFT",
      "config of kind EVAL",
    ]);
    expect(configs[0]?.properties?.validation?.properties).toHaveProperty("every");
    expect(configs[0]?.properties).not.toHaveProperty("validationEvery");
  });
});
