// A remote environment for tests, answering reset/step JSON on 127.0.0.1 as a
// user's server would, and a control plane (web + one worker) that allows its host.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import type { ZRemoteResetRequest, ZRemoteStepRequest } from "@opentinker/protocol";
import type { z } from "zod";
import { ControlPlane } from "./harness.ts";

export interface RemoteEnvHandlers {
  reset(input: z.infer<typeof ZRemoteResetRequest>): unknown;
  step(input: z.infer<typeof ZRemoteStepRequest>): unknown;
}

export interface RemoteEnvStack {
  cp: ControlPlane;
  /** The environment's base URL (…/env), as an environment row names it. */
  url: string;
  stop(): Promise<void>;
}

function listen(handlers: RemoteEnvHandlers) {
  const server = createServer((req, res) => {
    let body = "";
    req.on("data", (c: Buffer) => {
      body += c.toString();
    });
    req.on("end", () => {
      res.setHeader("content-type", "application/json");
      const input = JSON.parse(body || "{}");
      if (req.url === "/env/reset") return void res.end(JSON.stringify(handlers.reset(input)));
      if (req.url === "/env/step") return void res.end(JSON.stringify(handlers.step(input)));
      res.statusCode = 404;
      res.end("{}");
    });
  });
  return new Promise<typeof server>((resolve) => server.listen(0, "127.0.0.1", () => resolve(server)));
}

/** Starts the environment, then the control plane with its host on the allow-list. */
export async function startRemoteEnvStack(handlers: RemoteEnvHandlers): Promise<RemoteEnvStack> {
  const server = await listen(handlers);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/env`;
  const allowed = new URL(url).host;
  // The web process of the harness reads its allow-list from the environment.
  process.env.OPENTINKER_REMOTE_ENV_HOSTS = allowed;
  const cp = await ControlPlane.start();
  await cp.startWorker({ OPENTINKER_REMOTE_ENV_HOSTS: allowed });
  return {
    cp,
    url,
    stop: async () => {
      delete process.env.OPENTINKER_REMOTE_ENV_HOSTS;
      server.close();
      await cp.stop();
    },
  };
}
