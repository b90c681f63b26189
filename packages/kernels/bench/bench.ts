// npm run bench -w @opentinker/kernels -- --json
// Prints one JSON object on stdout (progress on stderr). Never a timed test.
import { cpus } from "node:os";
import { kernelInfo } from "../src/index.ts";
import { benchAttentionDecode } from "./attention.ts";
import { benchGemm } from "./gemm.ts";
import { benchMultiLora } from "./multilora.ts";

const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
const want = (name: string) => !only || only.split(",").includes(name);

const result = {
  machine: { cpu: cpus()[0]?.model ?? "unknown", cores: cpus().length },
  kernels: kernelInfo(),
  gemm: want("gemm") ? benchGemm() : undefined,
  multilora: want("multilora") ? benchMultiLora() : undefined,
  attention_decode: want("attention") ? benchAttentionDecode() : undefined,
};
process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
