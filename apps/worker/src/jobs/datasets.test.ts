// How a job's built-in environment becomes its dataset: nim's opponent for
// training and for held-out games, shapes drawn for the base model's picture.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadBaseModel } from "@opentinker/engine";
import { TINY_MODEL, writeTinyModel } from "@opentinker/engine/testing";
import type { RendererTokenizer } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { environmentDataset } from "./datasets.ts";

let dir: string;
let tokenizer: RendererTokenizer;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-datasets-"));
  await writeTinyModel(path.join(dir, "model"), TINY_MODEL);
  tokenizer = (await loadBaseModel(path.join(dir, "model"), "tiny")).tokenizer as RendererTokenizer;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const builtin = (name: string, config: Record<string, unknown> = {}) => ({
  kind: "BUILTIN" as const,
  builtin: name,
  url: null,
  config,
});
const shape = (split: "train" | "validation") => ({
  tokenizer,
  split,
  seed: 1,
  batches: 1,
  groupsPerBatch: 2,
  groupSize: 3,
});

/** The tags of a dataset's first batch, and how many envs its first group makes. */
async function firstBatch(dataset: ReturnType<typeof environmentDataset>) {
  const groups = dataset.batch(0);
  return { tags: groups.map((g) => g.tag), envs: (await groups[0]?.makeEnvs())?.length };
}

describe("a job's built-in environment as a dataset", () => {
  it("nim self-play trains both seats of groupSize games, and validates against the random player", async () => {
    const nim = builtin("nim");
    expect(await firstBatch(environmentDataset(nim, shape("train"), []))).toEqual({
      tags: ["selfplay/nim", "selfplay/nim"],
      envs: 6,
    });
    expect(await firstBatch(environmentDataset(nim, shape("validation"), []))).toEqual({
      tags: ["vs-opponent/nim", "vs-opponent/nim"],
      envs: 3,
    });
  });

  it("nim against a fixed opponent trains only the learner's seat", async () => {
    const nim = builtin("nim", { opponent: "optimal" });
    expect(await firstBatch(environmentDataset(nim, shape("train"), []))).toEqual({
      tags: ["vs-opponent/nim", "vs-opponent/nim"],
      envs: 3,
    });
  });

  it("shapes draws pictures of the base model's size, taking its image positions", async () => {
    const dataset = environmentDataset(builtin("shapes"), shape("train"), [], {
      image: { size: 32, tokens: 16 },
    });
    const [env] = (await dataset.batch(0)[0]?.makeEnvs()) ?? [];
    const { observation } = (await env?.initialObservation()) ?? { observation: { chunks: [] } };
    expect(observation.chunks[0]).toMatchObject({ type: "image", format: "png", expectedTokens: 16 });
  });

  it("refuses shapes on a text-only base model, naming what it needs", () => {
    expect(() => environmentDataset(builtin("shapes"), shape("train"), [])).toThrow(
      /vision-language base model/,
    );
  });
});
