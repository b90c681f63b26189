// Where loop metrics go: a JSONL file, the console, or (later) the database.
import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";

export interface MetricsRecord {
  step: number;
  [name: string]: number;
}

export interface MetricsSink {
  write(record: MetricsRecord): void;
}

export class JsonlSink implements MetricsSink {
  constructor(readonly file: string) {
    mkdirSync(path.dirname(file), { recursive: true });
  }

  write(record: MetricsRecord): void {
    appendFileSync(this.file, `${JSON.stringify({ time: new Date().toISOString(), ...record })}\n`);
  }
}

/** A one-line summary per step on stderr. */
export class ConsoleSink implements MetricsSink {
  constructor(private readonly keys: string[] = ["reward/mean", "loss/sum", "val/reward/mean"]) {}

  write(record: MetricsRecord): void {
    const parts = this.keys
      .filter((k) => record[k] !== undefined)
      .map((k) => `${k} ${(record[k] as number).toFixed(4)}`);
    process.stderr.write(`step ${record.step}  ${parts.join("  ")}\n`);
  }
}

export class MemorySink implements MetricsSink {
  readonly records: MetricsRecord[] = [];

  write(record: MetricsRecord): void {
    this.records.push(record);
  }
}

export const fanOut = (...sinks: MetricsSink[]): MetricsSink => ({
  write: (r) => {
    for (const s of sinks) s.write(r);
  },
});
