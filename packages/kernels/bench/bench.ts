// npm run bench -w @opentinker/kernels -- --json
// Prints one JSON object on stdout (progress on stderr). Never a timed test.
import "./openblas-idle.ts";
import { machineInfo } from "../src/index.ts";
import { benchAttentionDecode, benchAttentionPrefill } from "./attention.ts";
import { benchAttentionTrain } from "./attention-train.ts";
import { benchDecodeStream } from "./decode-stream.ts";
import { benchGemm } from "./gemm.ts";
import { benchGemmBf16 } from "./gemm-bf16.ts";
import { benchMultiLora } from "./multilora.ts";
import { benchSample } from "./sample.ts";

const only = process.argv.find((arg) => arg.startsWith("--only="))?.slice("--only=".length);
const want = (name: string) => !only || only.split(",").includes(name);

const result = {
  machine: machineInfo(),
  gemm: want("gemm") ? benchGemm() : undefined,
  gemm_bf16: want("gemm-bf16") ? benchGemmBf16() : undefined,
  decode_stream: want("decode-stream") ? benchDecodeStream() : undefined,
  multilora: want("multilora") ? benchMultiLora() : undefined,
  attention_decode: want("attention") ? benchAttentionDecode() : undefined,
  attention_prefill: want("attention-prefill") ? benchAttentionPrefill() : undefined,
  attention_train: want("attention-train") ? benchAttentionTrain() : undefined,
  sample: want("sample") ? benchSample() : undefined,
};
process.stdout.write(`${JSON.stringify(result, null, process.argv.includes("--json") ? 0 : 2)}\n`);
