// npm run bench -w @opentinker/engine -- --json [--only=train,sampling,bf16,llama] [--model=small|qwen] [--repeats=3]
//   [--dtype=f32|bf16] (llama: the weights both engines run)
// Prints one JSON object on stdout (progress on stderr). Never a timed test.
// `llama` (the llama.cpp side by side) runs only when named: it installs
// node-llama-cpp into ~/.cache/opentinker-bench on first use.
import { machineInfo } from "@opentinker/kernels";
import type { WeightDtype } from "../src/model/index.ts";
import { benchLlama } from "./llama.ts";
import { benchSampling } from "./sampling.ts";
import { benchTrain } from "./train.ts";
import { benchWeightDtype } from "./weight-dtype.ts";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const only = arg("only");

function weightDtypeArg(value: string | undefined): WeightDtype {
  if (value === undefined || value === "f32" || value === "bf16") return value ?? "f32";
  throw new RangeError(`--dtype must be f32 or bf16, got "${value}"`);
}
const want = (section: string) => !only || only.split(",").includes(section);
const named = (section: string) => only?.split(",").includes(section) ?? false;

const result = {
  machine: machineInfo(),
  train: want("train") ? await benchTrain(arg("model")) : undefined,
  sampling: want("sampling") ? await benchSampling(arg("model")) : undefined,
  bf16: want("bf16") ? await benchWeightDtype(Number(arg("repeats") ?? 5)) : undefined,
  llama: named("llama")
    ? await benchLlama(arg("model"), Number(arg("repeats") ?? 3), weightDtypeArg(arg("dtype")))
    : undefined,
};
process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
