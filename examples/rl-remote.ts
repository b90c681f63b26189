// The toy RL task (examples/toy-rl.ts) against a running OpenTinker server:
// the environment runs here, sampling and training on the server's workers.
//   npm start                      # prints the demo team's API key once, and the URL it serves
//   OPENTINKER_API_KEY=ot_... npm run example:rl-remote [-- --url http://127.0.0.1:3000 --model tiny-random --steps 12]
// The server's URL is --url, else OPENTINKER_URL, else http://127.0.0.1:3000.
import { parseArgs } from "node:util";
import { RemoteServiceClient } from "@opentinker/sdk";
import { readExamplesEnv } from "./env.ts";
import { assertServerReachable, describeFailure } from "./server-check.ts";
import { runToyRlExample } from "./toy-rl.ts";

const env = readExamplesEnv();

const { values } = parseArgs({
  options: {
    url: { type: "string", default: env.OPENTINKER_URL },
    model: { type: "string", default: "tiny-random" },
    steps: { type: "string", default: "12" },
  },
});
const apiKey = env.OPENTINKER_API_KEY;
if (!apiKey) {
  console.error("set OPENTINKER_API_KEY to a key of your team (npm start prints the demo team's key once)");
  process.exit(2);
}
try {
  // Checked first, so a wrong URL is one line before any training client is made.
  await assertServerReachable(values.url);
  const service = new RemoteServiceClient({ baseUrl: values.url, apiKey });
  await runToyRlExample(service, { baseModel: values.model, steps: Number(values.steps), name: "rl-remote" });
} catch (error) {
  console.error(`rl-remote: ${describeFailure(error, values.url)}`);
  process.exit(1);
}
