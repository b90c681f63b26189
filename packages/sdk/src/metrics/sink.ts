// Where loop metrics go: a JSONL file, the console, or (later) the database.
import { appendFileSync, mkdirSync } from "node:fs";
import path from "node:path";
import { SingleBar } from "cli-progress";

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

export interface ConsoleSinkOptions {
  /** Metrics to show, in order. */
  keys?: string[];
  /** Steps in the run: with it, a progress bar; without, one line per step. */
  total?: number;
  stream?: NodeJS.WritableStream;
}

/** Progress on stderr: a bar with the latest metrics, or a line per step. */
export class ConsoleSink implements MetricsSink {
  private readonly keys: string[];
  private readonly bar: SingleBar | null;
  private readonly stream: NodeJS.WritableStream;

  constructor(options: ConsoleSinkOptions = {}) {
    this.keys = options.keys ?? ["reward/mean", "loss/sum", "val/reward/mean"];
    this.stream = options.stream ?? process.stderr;
    this.bar = options.total
      ? new SingleBar({
          format: "[{bar}] {value}/{total} steps | {metrics}",
          stream: this.stream,
          noTTYOutput: true,
          notTTYSchedule: 0,
        })
      : null;
    this.bar?.start(options.total ?? 0, 0, { metrics: "" });
  }

  private summary(record: MetricsRecord): string {
    return this.keys
      .filter((k) => record[k] !== undefined)
      .map((k) => `${k} ${(record[k] as number).toFixed(4)}`)
      .join("  ");
  }

  write(record: MetricsRecord): void {
    if (!this.bar) {
      this.stream.write(`step ${record.step}  ${this.summary(record)}\n`);
      return;
    }
    this.bar.update(record.step + 1, { metrics: this.summary(record) });
    if (record.step + 1 >= this.bar.getTotal()) this.bar.stop();
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
