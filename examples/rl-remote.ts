// The toy RL task (examples/toy-rl.ts) against a running OpenTinker server:
// the environment runs here, sampling and training on the server's workers.
//   npm start                      # prints the demo team's API key once, and the URL it serves
//   OPENTINKER_API_KEY=ot_... npm run example:rl-remote [-- --url http://127.0.0.1:3000 --model tiny-random --steps 12]
// The server's URL is --url, else OPENTINKER_URL, else http://127.0.0.1:3000.
// Its adapter is named "rl-remote" and deleted when the run ends (one an
// interrupted run left is deleted at the next start), so runs leave nothing
// behind and hold no worker slot once done.
import { parseArgs } from "node:util";
import type { AdapterInfo, LoraConfig, TrainingClient } from "@opentinker/protocol";
import { RemoteServiceClient } from "@opentinker/sdk";
import { readExamplesEnv } from "./env.ts";
import { assertServerReachable, describeFailure } from "./server-check.ts";
import { runToyRlExample } from "./toy-rl.ts";

const env = readExamplesEnv();
const ADAPTER_NAME = "rl-remote";

/** The remote service, with the example's one adapter under its own name. */
class ExampleService extends RemoteServiceClient {
  override async createLoraTrainingClient(config: LoraConfig): Promise<TrainingClient> {
    await this.deleteAdapter();
    return super.createLoraTrainingClient({ ...config, name: ADAPTER_NAME });
  }

  /** Deletes the team's adapter of this example, if it has one. */
  async deleteAdapter(): Promise<void> {
    const adapters = await this.api.request<AdapterInfo[]>("GET", "/v1/adapters");
    for (const adapter of adapters.filter((a) => a.name === ADAPTER_NAME))
      await this.api.request("DELETE", `/v1/adapters/${encodeURIComponent(adapter.id)}`);
  }
}

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
  const service = new ExampleService({ baseUrl: values.url, apiKey });
  try {
    await runToyRlExample(service, {
      baseModel: values.model,
      steps: Number(values.steps),
      name: "rl-remote",
    });
  } finally {
    await service.deleteAdapter().catch((error: unknown) => {
      console.error(
        `rl-remote: could not delete adapter ${ADAPTER_NAME}: ${describeFailure(error, values.url)}`,
      );
    });
  }
} catch (error) {
  console.error(`rl-remote: ${describeFailure(error, values.url)}`);
  process.exit(1);
}
