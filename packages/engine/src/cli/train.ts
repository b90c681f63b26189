// A quick manual check: train a policy on a JSONL file of datums.
//   npm run train -w @opentinker/engine -- --model <hf dir> --data <datums.jsonl>
//     [--full] [--rank 16] [--alpha 32] [--loss cross_entropy] [--epochs 1]
//     [--batch 8] [--lr 1e-4] [--out <snapshot dir>]
import { createReadStream } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { parseArgs } from "node:util";
import { type Datum, type LossFn, ZDatum, ZLossFn } from "@opentinker/protocol";
import { LocalStore } from "@opentinker/store";
import { SingleBar } from "cli-progress";
import { loadBaseModel } from "../base-model.ts";
import { createFullPolicy } from "../policy/full-policy.ts";
import { createLoraPolicy } from "../policy/lora-policy.ts";
import { snapshotFiles } from "../snapshots/peft.ts";
import { Trainer } from "../trainer/trainer.ts";

const USAGE =
  "usage: train --model <dir> --data <file.jsonl> [--full] [--rank N] [--alpha N] [--loss NAME] [--epochs N] [--batch N] [--lr X] [--out DIR]";

async function readDatums(file: string): Promise<Datum[]> {
  const datums: Datum[] = [];
  let line = 0;
  for await (const text of createInterface({
    input: createReadStream(file),
    crlfDelay: Number.POSITIVE_INFINITY,
  })) {
    line++;
    if (!text.trim()) continue;
    let json: unknown;
    try {
      json = JSON.parse(text);
    } catch {
      throw new Error(`${file}:${line}: not valid JSON`);
    }
    const parsed = ZDatum.safeParse(json);
    if (!parsed.success) {
      const issue = parsed.error.issues[0];
      throw new Error(`${file}:${line}: ${issue?.path.join(".") || "datum"}: ${issue?.message}`);
    }
    datums.push(parsed.data);
  }
  if (datums.length === 0) throw new Error(`${file}: no datums`);
  return datums;
}

function number(value: string | undefined, name: string, fallback: number): number {
  if (value === undefined) return fallback;
  const n = Number(value);
  if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got "${value}"`);
  return n;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      model: { type: "string" },
      data: { type: "string" },
      full: { type: "boolean", default: false },
      rank: { type: "string" },
      alpha: { type: "string" },
      loss: { type: "string", default: "cross_entropy" },
      epochs: { type: "string" },
      batch: { type: "string" },
      lr: { type: "string" },
      out: { type: "string" },
    },
  });
  if (!values.model || !values.data) throw new Error(USAGE);
  const loss = ZLossFn.safeParse(values.loss);
  if (!loss.success) throw new Error(`--loss must be one of ${ZLossFn.options.join(", ")}`);
  const rank = number(values.rank, "rank", 16);
  const epochs = number(values.epochs, "epochs", 1);
  const batchSize = number(values.batch, "batch", 8);
  const learningRate = number(values.lr, "lr", 1e-4);

  const base = await loadBaseModel(path.resolve(values.model));
  const data = await readDatums(values.data);
  const policy = values.full
    ? createFullPolicy(base)
    : createLoraPolicy(base, {
        rank,
        alpha: number(values.alpha, "alpha", 32),
        trainAttn: true,
        trainMlp: true,
        trainUnembed: false,
        seed: 0,
      });
  const trainer = new Trainer(policy);
  const steps = Math.ceil(data.length / batchSize) * epochs;
  const bar = new SingleBar({
    format: "train [{bar}] {value}/{total} steps | loss/token {loss}",
    stream: process.stderr,
  });
  bar.start(steps, 0, { loss: "…" });
  for (let epoch = 0; epoch < epochs; epoch++) {
    for (let start = 0; start < data.length; start += batchSize) {
      const out = trainer.forwardBackward(data.slice(start, start + batchSize), loss.data as LossFn);
      trainer.optimStep({ learningRate });
      const perToken = (out.metrics["loss:sum"] as number) / Math.max(1, out.metrics["tokens:sum"] as number);
      bar.increment(1, { loss: perToken.toFixed(4) });
      console.log(JSON.stringify({ step: policy.step, epoch, ...out.metrics }));
    }
  }
  bar.stop();
  if (values.out) {
    const stored = await new LocalStore(path.resolve(values.out)).put(
      `step-${policy.step}`,
      snapshotFiles(policy),
    );
    console.error(`snapshot written to ${stored.path} (${stored.checksum})`);
  }
}

main().catch((error: unknown) => {
  console.error(`train: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
