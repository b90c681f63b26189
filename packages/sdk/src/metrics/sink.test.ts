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

  const capture = (isTTY: boolean) => {
    const stream = Object.assign(new PassThrough(), { isTTY });
    let text = "";
    stream.on("data", (chunk: Buffer) => {
      text += chunk.toString();
    });
    return { stream, text: () => text };
  };

  it("on a terminal the console redraws a progress bar with the latest metrics when the run's length is known", () => {
    const out = capture(true);
    const bar = new ConsoleSink({ keys: ["reward/mean"], total: 2, stream: out.stream });
    bar.write({ step: 0, "reward/mean": 0.25 });
    bar.write({ step: 1, "reward/mean": 0.5 });
    expect(out.text()).toContain("2/2 steps | reward/mean 0.5000");
  });

  it("in a pipe the console never redraws: a plain line per N steps and one for the last, even with a total", () => {
    const out = capture(false);
    const sink = new ConsoleSink({ keys: ["reward/mean"], total: 10, every: 4, stream: out.stream });
    for (let step = 0; step < 10; step++) sink.write({ step, "reward/mean": step / 10 });
    expect(out.text()).toBe(
      [
        "4/10 steps  reward/mean 0.3000",
        "8/10 steps  reward/mean 0.7000",
        "10/10 steps  reward/mean 0.9000",
        "",
      ].join("\n"),
    );
    expect(out.text()).not.toContain("\r");
    expect(out.text()).not.toContain("\u001b");
  });

  it("in a pipe a long run prints about 50 lines by default, and a run of unknown length a line per step", () => {
    const long = capture(false);
    const sink = new ConsoleSink({ keys: ["reward/mean"], total: 1000, stream: long.stream });
    for (let step = 0; step < 1000; step++) sink.write({ step, "reward/mean": 1 });
    expect(long.text().trim().split("\n")).toHaveLength(50);
    const lineOut = capture(false);
    new ConsoleSink({ keys: ["reward/mean"], stream: lineOut.stream }).write({ step: 3, "reward/mean": 1 });
    expect(lineOut.text()).toBe("step 3  reward/mean 1.0000\n");
  });
});
