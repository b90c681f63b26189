// The same calls through OpenTinker's own TypeScript SDK, for every_call.py to
// compare with the Tinker SDK's answers on the same adapter: a forward pass
// (per-token logprobs and loss) and a seeded sample of the adapter's latest
// snapshot. Prints one JSON object.
//
//   OPENTINKER_URL=http://127.0.0.1:3000 OPENTINKER_API_KEY=ot_… node --import tsx ts_side.ts <adapter id> '<tokens json>'
import type { SnapshotVersion } from "@opentinker/protocol";
import { RemoteServiceClient } from "@opentinker/sdk";
import { readExamplesEnv } from "../env.ts";

const [adapterId, sequencesJson] = process.argv.slice(2);
const env = readExamplesEnv();
if (!adapterId || !sequencesJson || !env.OPENTINKER_API_KEY)
  throw new Error("usage: OPENTINKER_API_KEY=… ts_side.ts <adapter id> '<[[tokens]…]>'");
const service = new RemoteServiceClient({ baseUrl: env.OPENTINKER_URL, apiKey: env.OPENTINKER_API_KEY });
const sequences = JSON.parse(sequencesJson) as number[][];

const training = await service.trainingClientFor(adapterId);
const data = sequences.map((tokens) => ({
  modelInput: { chunks: [{ type: "encoded_text" as const, tokens: tokens.slice(0, -1) }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64" as const, data: tokens.slice(1) },
    weights: { dtype: "float32" as const, data: tokens.slice(1).map(() => 1) },
  },
}));
const forward = await (await training.forward(data, "cross_entropy")).result();

const versions = await service.api.request<SnapshotVersion[]>("GET", `/v1/adapters/${adapterId}/versions`);
const latest = versions.at(-1);
if (!latest) throw new Error(`adapter ${adapterId} has no snapshot`);
const sampler = await service.createSamplingClient({ handle: latest.handle });
const prompt = { chunks: [{ type: "encoded_text" as const, tokens: sequences[0]?.slice(0, 3) ?? [] }] };
const sampled = await (await sampler.sample(prompt, 2, { maxTokens: 6, temperature: 1, seed: 7 })).result();

console.log(
  JSON.stringify({
    loss: forward.metrics["loss:sum"],
    logprobs: forward.lossFnOutputs.map((o) => o.logprobs?.data ?? []),
    sampled: sampled.sequences.map((s) => s.tokens),
  }),
);
