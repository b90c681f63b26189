// npm run bench -w @opentinker/engine -- --json [--only=train,sampling,llama] [--model=small|qwen] [--repeats=3]
// Prints one JSON object on stdout (progress on stderr). Never a timed test.
// `llama` (the llama.cpp side by side) runs only when named: it installs
// node-llama-cpp into ~/.cache/opentinker-bench on first use.
import { cpus } from "node:os";
import { kernelInfo } from "@opentinker/kernels";
import { benchLlama } from "./llama.ts";
import { benchSampling } from "./sampling.ts";
import { benchTrain } from "./train.ts";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = arg("only");
const want = (section: string) => !only || only.split(",").includes(section);
const named = (section: string) => only?.split(",").includes(section) ?? false;

const result = {
  machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length },
  kernels: kernelInfo(),
  train: want("train") ? benchTrain(arg("model")) : undefined,
  sampling: want("sampling") ? await benchSampling(arg("model")) : undefined,
  llama: named("llama") ? await benchLlama(arg("model"), Number(arg("repeats") ?? 3)) : undefined,
};
process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
