import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { ConsoleSink, fanOut, JsonlSink, MemorySink } from "./sink.ts";

describe("metric sinks", () => {
  it("JSONL gets one line per step, with a time; fanOut feeds every sink", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "ot-sink-"));
    try {
      const file = path.join(dir, "nested", "metrics.jsonl");
      const memory = new MemorySink();
      const sink = fanOut(new JsonlSink(file), memory);
      sink.write({ step: 0, "reward/mean": 0.5 });
      sink.write({ step: 1, "reward/mean": 0.75 });
      const lines = (await readFile(file, "utf8"))
        .trim()
        .split("\n")
        .map((l) => JSON.parse(l));
      expect(lines.map((l) => [l.step, l["reward/mean"]])).toEqual([
        [0, 0.5],
        [1, 0.75],
      ]);
      expect(typeof lines[0].time).toBe("string");
      expect(memory.records).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("the console shows a progress bar with the latest metrics when the run's length is known, else a line per step", () => {
    const capture = () => {
      const stream = new PassThrough();
      let text = "";
      stream.on("data", (chunk: Buffer) => {
        text += chunk.toString();
      });
      return { stream, text: () => text };
    };
    const barOut = capture();
    const bar = new ConsoleSink({ keys: ["reward/mean"], total: 2, stream: barOut.stream });
    bar.write({ step: 0, "reward/mean": 0.25 });
    bar.write({ step: 1, "reward/mean": 0.5 });
    expect(barOut.text()).toContain("2/2 steps | reward/mean 0.5000");
    const lineOut = capture();
    new ConsoleSink({ keys: ["reward/mean"], stream: lineOut.stream }).write({ step: 3, "reward/mean": 1 });
    expect(lineOut.text()).toBe("step 3  reward/mean 1.0000\n");
  });
});
