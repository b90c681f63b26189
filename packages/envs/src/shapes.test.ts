import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loadBaseModel } from "@opentinker/engine";
import { writeTinyModel } from "@opentinker/engine/testing";
import { lossInput } from "@opentinker/protocol";
import { groupAdvantages, type RendererTokenizer, trajectoryDatums } from "@opentinker/sdk";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ShapesEnv, type ShapesTask, shapesDataset } from "./shapes.ts";
import { drawShapes, readPng } from "./shapes-image.ts";

let dir: string;
let tokenizer: RendererTokenizer;
let end: number;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "ot-shapes-"));
  await writeTinyModel(path.join(dir, "model"), {
    hiddenSize: 16,
    numLayers: 1,
    numHeads: 2,
    numKvHeads: 1,
    intermediateSize: 16,
  });
  tokenizer = (await loadBaseModel(path.join(dir, "model"), "tiny")).tokenizer as RendererTokenizer;
  end = tokenizer.tokenId("<|im_end|>") as number;
});
afterAll(() => rm(dir, { recursive: true, force: true }));

const say = (text: string) => [...tokenizer.encode(text, { addSpecialTokens: false }), end];

function pixel(png: ReturnType<typeof readPng>, x: number, y: number): number[] {
  const at = (y * png.width + x) * 4;
  return [png.data[at] as number, png.data[at + 1] as number, png.data[at + 2] as number];
}

async function tasks(seed: number): Promise<ShapesTask[]> {
  const ds = shapesDataset({ tokenizer, split: "train", seed, batches: 2, groupsPerBatch: 6, groupSize: 1 });
  const out: ShapesTask[] = [];
  for (let b = 0; b < 2; b++)
    for (const g of ds.batch(b)) out.push(((await g.makeEnvs())[0] as ShapesEnv).task);
  return out;
}

describe("shapes", () => {
  it("tasks are deterministic per seed and the picture shows each shape in its colour", async () => {
    const a = await tasks(5);
    expect(await tasks(5)).toEqual(a);
    for (const task of a) {
      const png = readPng(drawShapes(task.shapes, 32));
      expect([png.width, png.height]).toEqual([32, 32]);
      for (const s of task.shapes) expect(pixel(png, Math.floor(s.cx), Math.floor(s.cy))).toEqual(s.color);
      expect(pixel(png, 0, 0)).toEqual([245, 245, 240]);
      if (task.question === "count") expect(task.answer).toBe(String(task.shapes.length));
    }
    expect(new Set(a.map((t) => t.question))).toEqual(new Set(["name", "count"]));
  });

  it("the prompt is an image chunk (PNG) followed by the rendered question", async () => {
    const task = (await tasks(1))[0] as ShapesTask;
    const { observation } = await new ShapesEnv(task, tokenizer).initialObservation();
    const [image, text] = observation.chunks;
    expect(image).toMatchObject({ type: "image", format: "png", expectedTokens: 16 });
    expect(
      Buffer.from((image as { data: string }).data, "base64")
        .subarray(1, 4)
        .toString(),
    ).toBe("PNG");
    expect(text?.type).toBe("encoded_text");
  });

  it("rewards the right name or count; malformed answers get the format penalty", async () => {
    const name: ShapesTask = { question: "name", answer: "triangle", shapes: [] };
    const count: ShapesTask = { question: "count", answer: "3", shapes: [] };
    expect((await new ShapesEnv(name, tokenizer).step(say("triangle"))).reward).toBe(1);
    expect((await new ShapesEnv(name, tokenizer).step(say("Circle"))).reward).toBe(0);
    expect((await new ShapesEnv(count, tokenizer).step(say("3"))).reward).toBe(1);
    for (const [task, bad] of [
      [name, say("blob")],
      [count, say("three")],
      [count, tokenizer.encode("3", { addSpecialTokens: false })],
    ] as const) {
      expect(await new ShapesEnv(task, tokenizer).step([...bad])).toMatchObject({
        reward: -0.1,
        metrics: { "format/malformed": 1 },
      });
    }
  });

  it("a trajectory with an image becomes a datum that keeps the image and masks its positions", async () => {
    const task = (await tasks(2))[0] as ShapesTask;
    const env = new ShapesEnv(task, tokenizer);
    const { observation } = await env.initialObservation();
    const action = say(task.answer);
    const trajectory = {
      policyVersion: 1,
      transitions: [
        {
          observation,
          actionTokens: action,
          actionLogprobs: action.map(() => -1),
          reward: 1,
          done: true,
          metrics: {},
        },
      ],
    };
    const [scored] = groupAdvantages(
      { trajectories: [trajectory] },
      { centre: false, dropConstantGroups: false },
    );
    const [datum] = trajectoryDatums(scored as NonNullable<typeof scored>);
    expect(datum?.modelInput.chunks[0]?.type).toBe("image");
    const mask = lossInput(datum as NonNullable<typeof datum>, "mask");
    expect(mask.slice(0, 16).every((m) => m === 0)).toBe(true);
    expect(mask.slice(-action.length)).toEqual(action.map(() => 1));
  });
});
