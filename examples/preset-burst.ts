// A new user's first hour, as a drill (issue 44): start several built-in
// environments' preset RL jobs at once on a running server (by default seven:
// every built-in environment, arithmetic and guess-the-number twice), optionally
// with other processes loading the CPU, and wait until every one ends. Prints
// one JSON summary; exits 0 only when every job SUCCEEDED.
//
//   npm start                       # in another terminal; prints the demo team's key
//   OPENTINKER_API_KEY=ot_… npm run example:preset-burst -- --load 1 [--steps 60]
import { spawn } from "node:child_process";
import { parseArgs } from "node:util";
import { type BuiltinEnvironment, RL_PRESETS, type RlPresetConfig } from "@opentinker/protocol";
import { createOpenTinkerClient } from "@opentinker/sdk";
import { readExamplesEnv } from "./env.ts";
import { assertServerReachable, describeFailure } from "./server-check.ts";

/** The base model each environment's preset was measured on (docs/results.md). */
const MODEL_OF: Record<BuiltinEnvironment, string> = {
  arithmetic: "opentinker-text-tiny",
  "guess-number": "opentinker-text-tiny",
  nim: "opentinker-text-tiny",
  shapes: "opentinker-vl-tiny",
  calculator: "opentinker-tool-tiny",
};

const ORDER: BuiltinEnvironment[] = ["arithmetic", "guess-number", "nim", "shapes", "calculator"];
const POLL_MS = 5_000;

function options() {
  const { values } = parseArgs({
    options: {
      url: { type: "string" },
      jobs: { type: "string", default: "7" },
      steps: { type: "string" },
      load: { type: "string", default: "0" },
    },
  });
  const count = (name: string, raw: string | undefined, min: number) => {
    const n = Number(raw);
    if (!Number.isInteger(n) || n < min) throw new RangeError(`--${name}: ${raw} is not an integer ≥ ${min}`);
    return n;
  };
  const env = readExamplesEnv();
  if (!env.OPENTINKER_API_KEY) throw new RangeError("set OPENTINKER_API_KEY to a key of your team");
  return {
    url: values.url ?? env.OPENTINKER_URL,
    apiKey: env.OPENTINKER_API_KEY,
    jobs: count("jobs", values.jobs, 1),
    steps: values.steps === undefined ? null : count("steps", values.steps, 4),
    load: count("load", values.load, 0),
  };
}

/** The preset, cut to `steps` (validation stays quarterly) when asked. */
function presetConfig(env: BuiltinEnvironment, steps: number | null): RlPresetConfig {
  const config = RL_PRESETS[env].config;
  if (steps === null) return config;
  return {
    ...config,
    steps,
    validation: { ...config.validation, every: Math.max(1, Math.floor(steps / 4)) },
  };
}

/** Processes that spin a core each until killed: "other work on the two cores". */
function loadCpu(count: number) {
  const children = Array.from({ length: count }, () =>
    spawn(process.execPath, ["-e", "for (;;) {}"], { stdio: "ignore" }),
  );
  return () => {
    for (const child of children) child.kill("SIGKILL");
  };
}

async function main() {
  const opts = options();
  await assertServerReachable(opts.url);
  const client = createOpenTinkerClient({ url: opts.url, apiKey: opts.apiKey });
  const run = Date.now().toString(36);
  const planned = Array.from({ length: opts.jobs }, (_, i) => ORDER[i % ORDER.length] as BuiltinEnvironment);
  const jobs = await Promise.all(
    planned.map(async (builtin, i) => {
      const name = `burst-${run}-${i}-${builtin}`;
      const adapter = await client.adapters.create.mutate({ name, baseModel: MODEL_OF[builtin] });
      const env = await client.environments.create.mutate({ name, kind: "BUILTIN", builtin });
      return { builtin, adapterId: adapter.id, environmentId: env.id };
    }),
  );
  const stopLoad = loadCpu(opts.load);
  const started = Date.now();
  try {
    const created = await Promise.all(
      jobs.map((j) =>
        client.jobs.create.mutate({
          kind: "RL",
          adapterId: j.adapterId,
          environmentId: j.environmentId,
          config: presetConfig(j.builtin, opts.steps),
        }),
      ),
    );
    const ended = new Map<string, { status: string; seconds: number }>();
    while (ended.size < created.length) {
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
      const now = await Promise.all(created.map((job) => client.jobs.get.query({ jobId: job.id })));
      for (const job of now)
        if (!ended.has(job.id) && ["SUCCEEDED", "FAILED", "CANCELLED"].includes(job.status))
          ended.set(job.id, { status: job.status, seconds: Math.round((Date.now() - started) / 1000) });
      const line = now.map((job) => `${job.status.toLowerCase()} ${job.step}`).join(", ");
      console.error(`preset-burst: ${Math.round((Date.now() - started) / 1000)} s: ${line}`);
    }
    const final = await Promise.all(created.map((job) => client.jobs.get.query({ jobId: job.id })));
    const summary = final.map((job, i) => ({
      environment: jobs[i]?.builtin,
      jobId: job.id,
      status: job.status,
      steps: job.step,
      faults: job.faults,
      lastFault: job.lastFault,
      errorClass: job.errorClass,
      error: job.error,
      seconds: ended.get(job.id)?.seconds,
    }));
    const succeeded = summary.filter((j) => j.status === "SUCCEEDED").length;
    console.log(JSON.stringify({ jobs: summary, succeeded, of: summary.length, load: opts.load }, null, 2));
    if (succeeded !== summary.length) process.exitCode = 1;
  } finally {
    stopLoad();
  }
}

main().catch((error: unknown) => {
  console.error(`preset-burst: ${describeFailure(error, readExamplesEnv().OPENTINKER_URL)}`);
  process.exitCode = 1;
});
