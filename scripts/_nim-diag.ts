// Diagnostic: which illegal moves does a self-play-trained nim policy make against the random player?
import { InProcessServiceClient, loadBaseModel } from "@opentinker/engine";
import { nimEvaluationDataset, nimSelfPlayDataset } from "@opentinker/envs";
import { evaluate, trainRl } from "@opentinker/sdk";
import { builtInModel } from "@opentinker/models";
const seed = Number(process.argv[2] ?? 4);
const steps = Number(process.argv[3] ?? 300);
const m = builtInModel("opentinker-text-tiny");
const base = await loadBaseModel(m.dir, m.name);
const svc = InProcessServiceClient.local([base], `/tmp/nimdiag-${seed}`, "diag");
const tc = await svc.createLoraTrainingClient({ baseModel: base.name, rank: 16, seed });
await trainRl({ trainingClient: tc, dataset: nimSelfPlayDataset({ seed, batches: steps, groupsPerBatch: 8, games: 4 }), lossFn: "ppo", adam: { learningRate: 1e-3 }, seed });
const saved = await (await tc.saveWeightsForSampler("d")).result();
const sampler = { client: await tc.createSamplingClient(saved.handle), version: saved.version };
const { groups, metrics } = await evaluate(sampler, nimEvaluationDataset({ seed: seed + 1, batches: 1, groupsPerBatch: 16, games: 8, opponent: "random" }), { seed });
console.log(JSON.stringify(metrics));
const counts = new Map<string, number>();
for (const g of groups) for (const t of g.trajectories) for (const tr of t.transitions) {
  const obs = Buffer.from(tr.observation.chunks.flatMap((c) => (c.type === "encoded_text" ? c.tokens : []))).toString("latin1");
  const key = `${obs.slice(-20)} -> ${JSON.stringify(tr.actionTokens)} illegal=${tr.metrics["game/illegal_move"] ?? "-"}`;
  if (tr.metrics["game/illegal_move"] === 1) counts.set(key, (counts.get(key) ?? 0) + 1);
}
console.log([...counts.entries()]);
