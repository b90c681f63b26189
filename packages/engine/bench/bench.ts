// npm run bench -w @opentinker/engine -- --json [--only=train,sampling] [--model=small|qwen]
// Prints one JSON object on stdout (progress on stderr). Never a timed test.
import { cpus } from "node:os";
import { kernelInfo } from "@opentinker/kernels";
import { benchSampling } from "./sampling.ts";
import { benchTrain } from "./train.ts";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = arg("only");
const want = (section: string) => !only || only.split(",").includes(section);

const result = {
  machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length },
  kernels: kernelInfo(),
  train: want("train") ? benchTrain(arg("model")) : undefined,
  sampling: want("sampling") ? await benchSampling(arg("model")) : undefined,
};
process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
