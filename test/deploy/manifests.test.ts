// What can be checked of the deployment without a cluster or an image build:
// the manifests parse; every variable they set is one the code's validated
// settings read (the process that gets it, for a container's own `env`); every
// probe names a route its server answers; the grace periods cover the drains;
// the Dockerfiles start files that exist.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { RequestWaiter, ZDbEnv } from "@opentinker/db";
import { createTestDatabase, type TestDatabase } from "@opentinker/db/testing";
import { LocalStore, ZStoreEnv } from "@opentinker/store";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { ZWebEnv } from "../../apps/web/src/env.ts";
import { createRequestListener } from "../../apps/web/src/server/http.ts";
import { ZWorkerEnv } from "../../apps/worker/src/env.ts";
import { startHealthServer } from "../../apps/worker/src/health.ts";
import { REPO_ROOT, ZClusterEnv } from "../../scripts/env.ts";

const KUBERNETES = path.join(REPO_ROOT, "deploy/kubernetes");
const keys = (...schemas: { shape: object }[]) => new Set(schemas.flatMap((s) => Object.keys(s.shape)));

/** What each container's process (and what it starts) reads, by the command its image runs. */
const PROCESS_KEYS = {
  web: keys(ZWebEnv, ZStoreEnv, ZDbEnv),
  worker: keys(ZClusterEnv, ZWorkerEnv, ZStoreEnv, ZDbEnv),
  setup: keys(ZClusterEnv, ZDbEnv),
};
const ALL_KEYS = new Set(Object.values(PROCESS_KEYS).flatMap((set) => [...set]));

// Loose shapes of the Kubernetes objects the checks read.
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  resources?: { limits?: Record<string, string | number> };
}
interface PodSpec {
  terminationGracePeriodSeconds?: number;
  containers: Container[];
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  data?: Record<string, string>;
  stringData?: Record<string, string>;
  spec?: { template?: { spec: PodSpec } };
}

function manifests(): K8sObject[] {
  const objects: K8sObject[] = [];
  for (const file of readdirSync(KUBERNETES).filter((f) => f.endsWith(".yaml"))) {
    for (const doc of parseAllDocuments(readFileSync(path.join(KUBERNETES, file), "utf8"))) {
      expect(doc.errors, `${file}: ${doc.errors.map((e) => e.message).join("; ")}`).toEqual([]);
      const value = doc.toJS() as K8sObject | null;
      if (value?.kind && value.kind !== "Kustomization") objects.push(value);
    }
  }
  return objects;
}

const objects = manifests();
const byKind = (kind: string) => objects.filter((o) => o.kind === kind);
const podOf = (name: string): PodSpec => {
  const spec = objects.find((o) => o.metadata.name === name)?.spec?.template?.spec;
  if (!spec) throw new Error(`no workload ${name} in deploy/kubernetes`);
  return spec;
};
const processOf = (container: Container): keyof typeof PROCESS_KEYS => {
  if (container.command?.includes("scripts/setup.ts")) return "setup";
  return container.image === "opentinker-web" ? "web" : "worker";
};
const envValue = (container: Container, name: string) => container.env?.find((e) => e.name === name)?.value;

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(() => t?.drop());

describe("the Kubernetes manifests", () => {
  it("parse, and list every file in the kustomization", () => {
    const kustomization = parseAllDocuments(
      readFileSync(path.join(KUBERNETES, "kustomization.yaml"), "utf8"),
    )[0]?.toJS() as {
      resources: string[];
    };
    for (const resource of kustomization.resources)
      expect(existsSync(path.join(KUBERNETES, resource))).toBe(true);
    expect(
      byKind("Deployment")
        .map((d) => d.metadata.name)
        .sort(),
    ).toEqual(["opentinker-web", "opentinker-worker"]);
    expect(byKind("Service").map((s) => s.metadata.name)).toEqual(["opentinker-web"]);
  });

  it("set only variables the code's settings read", () => {
    for (const map of [...byKind("ConfigMap"), ...byKind("Secret")])
      for (const key of Object.keys(map.data ?? map.stringData ?? {}))
        expect(ALL_KEYS.has(key), `${map.kind} ${map.metadata.name}: ${key} is read by no process`).toBe(
          true,
        );
    for (const workload of [...byKind("Deployment"), ...byKind("Job")]) {
      for (const container of workload.spec?.template?.spec.containers ?? []) {
        const own = PROCESS_KEYS[processOf(container)];
        for (const { name } of container.env ?? [])
          expect(
            own.has(name),
            `${workload.metadata.name}/${container.name}: ${name} is not read there`,
          ).toBe(true);
        for (const from of container.envFrom ?? []) {
          const ref = from.configMapRef ?? from.secretRef;
          const kind = from.configMapRef ? "ConfigMap" : "Secret";
          expect(
            byKind(kind).map((o) => o.metadata.name),
            `${workload.metadata.name}: ${kind}`,
          ).toContain(ref?.name);
        }
      }
    }
  });

  it("give every process what it requires", () => {
    const secret = byKind("Secret")[0]?.stringData ?? {};
    const config = byKind("ConfigMap")[0]?.data ?? {};
    const env = (container: Container) => ({
      ...config,
      ...secret,
      ...Object.fromEntries((container.env ?? []).map((e) => [e.name, e.value ?? "from-field"])),
    });
    for (const name of ["opentinker-web", "opentinker-worker"]) {
      const container = podOf(name).containers[0] as Container;
      const schema = processOf(container) === "web" ? ZWebEnv : ZWorkerEnv;
      expect(schema.safeParse(env(container)).error?.issues ?? []).toEqual([]);
      expect(ZStoreEnv.safeParse(env(container)).error?.issues ?? []).toEqual([]);
    }
  });

  it("probe routes the web process answers", async () => {
    const web = podOf("opentinker-web").containers[0] as Container;
    const server = createServer(
      createRequestListener({
        db: t.db,
        waiter: new RequestWaiter(t.db, t.url),
        sessionSecret: "deploy-test-session-secret-0123456789abcdef",
        store: new LocalStore(path.join(tmpdir(), "opentinker-deploy-test-store")),
      }),
    );
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const probe of [web.readinessProbe, web.livenessProbe, web.startupProbe]) {
        expect(probe?.httpGet, "an HTTP probe").toBeDefined();
        expect(web.ports?.map((p) => p.name)).toContain(probe?.httpGet?.port);
        expect((await fetch(`${base}${probe?.httpGet?.path}`)).status, probe?.httpGet?.path).toBe(200);
      }
    } finally {
      server.close();
    }
  });

  it("probe routes the worker answers, and request a GPU", async () => {
    const worker = podOf("opentinker-worker").containers[0] as Container;
    expect(worker.resources?.limits?.["nvidia.com/gpu"]).toBe(1);
    const port = worker.ports?.find((p) => p.name === "health")?.containerPort;
    expect(String(port)).toBe(envValue(worker, "WORKER_HEALTH_PORT"));
    const server = await startHealthServer(0, "127.0.0.1", 15_000, () => ({
      workerId: "w",
      lastBeatAt: Date.now(),
      draining: false,
    }));
    try {
      const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      for (const probe of [worker.readinessProbe, worker.livenessProbe, worker.startupProbe]) {
        expect(worker.ports?.map((p) => p.name)).toContain(probe?.httpGet?.port);
        expect((await fetch(`${base}${probe?.httpGet?.path}`)).status, probe?.httpGet?.path).toBe(200);
      }
    } finally {
      server.close();
    }
  });

  it("leave each pod time to drain before it is killed", () => {
    const web = podOf("opentinker-web");
    const webContainer = web.containers[0] as Container;
    const preStop = Number(webContainer.lifecycle?.preStop?.exec?.command.at(-1) ?? 0);
    const drainMs = ZWebEnv.shape.OPENTINKER_DRAIN_MS.parse(envValue(webContainer, "OPENTINKER_DRAIN_MS"));
    expect(web.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(preStop + drainMs / 1000);
    const worker = podOf("opentinker-worker");
    const workerDrainMs = ZClusterEnv.shape.WORKER_DRAIN_MS.parse(
      envValue(worker.containers[0] as Container, "WORKER_DRAIN_MS"),
    );
    expect(worker.terminationGracePeriodSeconds ?? 30).toBeGreaterThan(workerDrainMs / 1000);
  });
});

describe("the Dockerfiles", () => {
  for (const [file, image] of [
    ["web.Dockerfile", "opentinker-web"],
    ["worker.Dockerfile", "opentinker-worker"],
  ] as const) {
    it(`${file} starts a file that exists, exposes the port its pods use, and sets only variables read`, () => {
      const text = readFileSync(path.join(REPO_ROOT, "deploy", file), "utf8");
      const cmd = JSON.parse(/^CMD (\[.*\])$/m.exec(text)?.[1] ?? "[]") as string[];
      expect(existsSync(path.join(REPO_ROOT, cmd.at(-1) ?? "missing"))).toBe(true);
      const pod = objects.find(
        (o) => o.kind === "Deployment" && o.spec?.template?.spec.containers[0]?.image === image,
      );
      const ports = pod?.spec?.template?.spec.containers[0]?.ports?.map((p) => String(p.containerPort));
      expect(ports).toContain(/^EXPOSE (\d+)$/m.exec(text)?.[1]);
      // Variables of the runtime and tools (NODE_ENV, telemetry) are theirs, not settings of ours.
      const ours = [...text.matchAll(/^ENV (.+)$/gm)]
        .flatMap((m) => (m[1] ?? "").split(/\s+/).map((pair) => pair.split("=")[0] ?? ""))
        .filter(
          (name) => !["NODE_ENV", "NEXT_TELEMETRY_DISABLED", "TURBO_TELEMETRY_DISABLED"].includes(name),
        );
      const reads = image === "opentinker-web" ? PROCESS_KEYS.web : PROCESS_KEYS.worker;
      for (const name of ours) expect(reads.has(name), `${file}: ${name}`).toBe(true);
    });
  }
});
