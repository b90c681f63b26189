// A remote environment for tests, answering reset/step JSON on 127.0.0.1 as a
// user's server would, and a control plane (web + one worker) that allows its host.
import { createServer, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { ZRemoteResetRequest, ZRemoteStepRequest } from "@opentinker/protocol";
import type { z } from "zod";
import { ControlPlane } from "./harness.ts";

/** What a step handler returns to leave the step unanswered until `release()`. */
export const HOLD: unique symbol = Symbol("hold");

export interface RemoteEnvHandlers {
  /** `name` is the path segment before /reset: one server can serve several environments. */
  reset(input: z.infer<typeof ZRemoteResetRequest>, name: string): unknown;
  step(input: z.infer<typeof ZRemoteStepRequest>, name: string): unknown;
}

export interface RemoteEnv {
  /** The base URL of the environment called `name` (…/name), as an environment row names it. */
  url(name?: string): string;
  /** host:port, for OPENTINKER_REMOTE_ENV_HOSTS. */
  host: string;
  /** Steps held open right now. */
  readonly held: number;
  /** Answers every held step with this (by default: reward 0, done). */
  release(answer?: unknown): void;
  close(): void;
}

export interface RemoteEnvStack {
  cp: ControlPlane;
  /** The environment's base URL (…/env), as an environment row names it. */
  url: string;
  stop(): Promise<void>;
}

const DONE = { reward: 0, done: true };

/** A reset answer: session s0, s1, … with the given prompt tokens and a two-token budget. */
export function countingReset(tokens: (episode: number, name: string) => number[] = () => [10, 20, 30]) {
  let next = 0;
  return (_input: unknown, name: string) => {
    const episode = next++;
    return {
      sessionId: `s${episode}`,
      observation: { chunks: [{ type: "encoded_text", tokens: tokens(episode, name) }] },
      stop: { stop: [], maxTokens: 2 },
    };
  };
}

export async function startRemoteEnv(handlers: RemoteEnvHandlers): Promise<RemoteEnv> {
  const held: ServerResponse[] = [];
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      const [, name = "", op] = (req.url ?? "").split("/");
      const input = JSON.parse(body || "{}");
      const answer =
        op === "reset" ? handlers.reset(input, name) : op === "step" ? handlers.step(input, name) : undefined;
      if (answer === HOLD) return void held.push(res);
      if (answer === undefined) res.statusCode = 404;
      res.end(JSON.stringify(answer ?? {}));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const host = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  const release = (answer: unknown = DONE) => {
    for (const res of held.splice(0)) res.end(JSON.stringify(answer));
  };
  return {
    url: (name = "env") => `http://${host}/${name}`,
    host,
    get held() {
      return held.length;
    },
    release,
    close: () => {
      release();
      server.close();
    },
  };
}

/** Starts the environment, then the control plane with its host on the allow-list. */
export async function startRemoteEnvStack(handlers: RemoteEnvHandlers): Promise<RemoteEnvStack> {
  const env = await startRemoteEnv(handlers);
  // The web process of the harness reads its allow-list from the environment.
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = env.host;
  const cp = await ControlPlane.start();
  await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: env.host });
  return {
    cp,
    url: env.url(),
    stop: async () => {
      delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
      env.close();
      await cp.stop();
    },
  };
}
