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
  /** Steps in the run: with it, a progress bar on a terminal, and "N/total steps" lines elsewhere. */
  total?: number;
  /**
   * Off a terminal, one line per this many steps (and one for the last).
   * Default: every step, or about 50 lines over a run whose total is known.
   */
  every?: number;
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
}

/** Lines a run of known length prints off a terminal, about. */
const PIPED_LINES = 50;

/**
 * Progress on stderr: on a terminal, a bar with the latest metrics when the
 * run's length is known; in a pipe or a file, plain lines (a redrawn bar would
 * fill a log with carriage returns).
 */
export class ConsoleSink implements MetricsSink {
  private readonly keys: string[];
  private readonly bar: SingleBar | null;
  private readonly stream: NodeJS.WritableStream;
  private readonly total: number | undefined;
  private readonly every: number;

  constructor(options: ConsoleSinkOptions = {}) {
    this.keys = options.keys ?? ["reward/mean", "loss/sum", "val/reward/mean"];
    const stream = options.stream ?? process.stderr;
    this.stream = stream;
    this.total = options.total;
    this.every = Math.max(
      1,
      Math.floor(options.every ?? (this.total ? Math.ceil(this.total / PIPED_LINES) : 1)),
    );
    this.bar =
      this.total && stream.isTTY === true
        ? new SingleBar({ format: "[{bar}] {value}/{total} steps | {metrics}", stream })
        : null;
    this.bar?.start(this.total ?? 0, 0, { metrics: "" });
  }

  private summary(record: MetricsRecord): string {
    return this.keys
      .filter((k) => record[k] !== undefined)
      .map((k) => `${k} ${(record[k] as number).toFixed(4)}`)
      .join("  ");
  }

  write(record: MetricsRecord): void {
    const done = record.step + 1;
    if (this.bar) {
      this.bar.update(done, { metrics: this.summary(record) });
      if (done >= this.bar.getTotal()) this.bar.stop();
      return;
    }
    const last = this.total !== undefined && done >= this.total;
    if (done % this.every !== 0 && !last) return;
    const position = this.total ? `${done}/${this.total} steps` : `step ${record.step}`;
    this.stream.write(`${position}  ${this.summary(record)}\n`);
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
