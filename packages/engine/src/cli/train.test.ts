import { spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { readdir, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { buildSftDatum } from "@opentinker/protocol";
import { describe, expect, it } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { writeTinyModel } from "../testing/tiny-model.ts";

const CLI = fileURLToPath(new URL("./train.ts", import.meta.url));

function run(args: string[]) {
  return spawnSync(process.execPath, ["--import", "tsx", CLI, ...args], { encoding: "utf8" });
}

describe("the train CLI", () => {
  it("trains a LoRA policy on a JSONL file, lowers the loss and writes a PEFT snapshot", async () => {
    const dir = await tempDir();
    await writeTinyModel(path.join(dir, "model"), {
      hiddenSize: 32,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      intermediateSize: 32,
      scale: 0.2,
    });
    const datums = Array.from({ length: 4 }, (_, i) =>
      buildSftDatum({ sequence: [1 + i, 50, 60, 70, 80], weights: [0, 0, 1, 1, 1] }),
    );
    await writeFile(path.join(dir, "data.jsonl"), `${datums.map((d) => JSON.stringify(d)).join("\n")}\n`);
    const result = run([
      "--model",
      path.join(dir, "model"),
      "--data",
      path.join(dir, "data.jsonl"),
      "--rank",
      "4",
      "--epochs",
      "15",
      "--batch",
      "4",
      "--lr",
      "0.01",
      "--out",
      path.join(dir, "out"),
    ]);
    expect(result.status, result.stderr).toBe(0);
    const steps = result.stdout
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as Record<string, number>);
    expect(steps).toHaveLength(15);
    expect(steps[14]?.["loss:sum"]).toBeLessThan((steps[0]?.["loss:sum"] as number) * 0.8);
    const [snapshot] = await readdir(path.join(dir, "out"));
    expect(existsSync(path.join(dir, "out", snapshot as string, "adapter_model.safetensors"))).toBe(true);
    expect(existsSync(path.join(dir, "out", snapshot as string, "adapter_config.json"))).toBe(true);
  });

  it("a malformed line is reported with its file and line number", async () => {
    const dir = await tempDir();
    await writeTinyModel(path.join(dir, "model"), {
      hiddenSize: 32,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      intermediateSize: 32,
    });
    await writeFile(
      path.join(dir, "data.jsonl"),
      `${JSON.stringify(buildSftDatum({ sequence: [1, 2], weights: [0, 1] }))}\n{"modelInput": 3}\n`,
    );
    const result = run(["--model", path.join(dir, "model"), "--data", path.join(dir, "data.jsonl")]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/data\.jsonl:2: modelInput/);
  });
});
