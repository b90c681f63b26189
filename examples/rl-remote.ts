// The toy RL task (examples/toy-rl.ts) against a running OpenTinker server:
// the environment runs here, sampling and training on the server's workers.
//   npm start                      # prints the demo team's API key once
//   OPENTINKER_API_KEY=ot_... npm run example:rl-remote [-- --url http://127.0.0.1:3000 --model tiny-random --steps 12]
import path from "node:path";
import { parseArgs } from "node:util";
import { ConsoleSink, fanOut, JsonlSink, RemoteServiceClient } from "@opentinker/sdk";
import { toyRl } from "./toy-rl.ts";

const { values } = parseArgs({
  options: {
    url: { type: "string", default: process.env.OPENTINKER_URL ?? "http://127.0.0.1:3000" },
    model: { type: "string", default: "tiny-random" },
    steps: { type: "string", default: "12" },
  },
});
const apiKey = process.env.OPENTINKER_API_KEY;
if (!apiKey) {
  console.error("set OPENTINKER_API_KEY to a key of your team (npm start prints the demo team's key once)");
  process.exit(2);
}
const service = new RemoteServiceClient({ baseUrl: values.url, apiKey });
const steps = Number(values.steps);
const metricsFile = path.resolve("examples/out/rl-remote.jsonl");
const history = await toyRl(service, {
  baseModel: values.model,
  steps,
  sink: fanOut(
    new ConsoleSink({ keys: ["reward/mean", "loss/sum", "policy/version"], total: steps }),
    new JsonlSink(metricsFile),
  ),
});
const first = history[0]?.["reward/mean"] ?? 0;
const last = history[history.length - 1]?.["reward/mean"] ?? 0;
console.log(
  `reward ${first.toFixed(3)} → ${last.toFixed(3)} over ${history.length} steps; metrics in ${metricsFile}`,
);
