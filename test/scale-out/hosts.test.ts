// Many workers on many hosts: two worker hosts, each in a network namespace of
// its own, reach Postgres and the S3 store only over their veth links, and join
// with DATABASE_URL and the store settings alone (`npm run worker`: a supervised
// worker). A worker that dies is restarted by its host; a host that dies
// mid-job has the job resume on the other host from the checkpoint in the
// store, with no step applied twice, and retention leaves the bucket holding
// exactly what the rows name.
import { execFileSync, spawnSync } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { openStore, readStoreEnv } from "@opentinker/store";
import { S3RVER_CREDENTIALS, type S3TestServer, startS3Server } from "@opentinker/store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BASE, ControlPlane, STALE_AFTER_MS, type Team, until } from "../control-plane/harness.ts";
import { createHost, netnsUnavailable, type TestHost } from "./netns.ts";
import { kill, type Service, startService, WORKER_HOST } from "./processes.ts";

const unavailable = netnsUnavailable();
if (unavailable) console.log(`scale-out hosts: skipped: ${unavailable}`);

const PREFIX = "cluster";
let s3: S3TestServer;
let cp: ControlPlane;
let team: Team;
let dir: string;
const hosts: TestHost[] = [];
const running = new Map<string, Service>();

/** Starts `npm run worker` inside a host: the database and the store through its link only. */
async function startWorkerHost(host: TestHost): Promise<Service> {
  const database = new URL(cp.t.url);
  const pg = await host.reach({ host: database.hostname, port: Number(database.port || 5432) });
  database.hostname = pg.host;
  database.port = String(pg.port);
  const store = await host.reach({ host: "127.0.0.1", port: s3.port });
  const service = await startService(
    host.name,
    [...host.exec, process.execPath, "--import", "tsx", WORKER_HOST],
    {
      ...process.env,
      ...s3.env(PREFIX, `http://${store.host}:${store.port}`),
      DATABASE_URL: database.toString(),
      OPENTINKER_DATA_DIR: path.join(dir, host.name),
      WORKER_HOST: host.name,
      WORKER_HEARTBEAT_MS: "200",
      WORKER_STALE_AFTER_MS: String(STALE_AFTER_MS),
      WORKER_CONCURRENCY: "8",
    },
    /^worker: registered as (\S+)/,
    { detached: true },
  );
  running.set(host.name, service);
  return service;
}

const registrations = (service: Service) =>
  service.output.flatMap((line) => /^worker: registered as (\S+)/.exec(line)?.[1] ?? []);

beforeAll(async () => {
  if (unavailable) return;
  dir = await mkdtemp(path.join(tmpdir(), "opentinker-hosts-"));
  s3 = await startS3Server();
  // The web side (this process) reads the same bucket, over loopback.
  const store = await openStore(readStoreEnv(s3.env(PREFIX)), { dataDir: path.join(dir, "web") });
  cp = await ControlPlane.start({ store });
  team = await cp.team("hosts");
  hosts.push(await createHost("host-a", 0), await createHost("host-b", 1));
  await Promise.all(hosts.map((host) => startWorkerHost(host)));
}, 180_000);

afterAll(async () => {
  await Promise.all([...running.values()].map((service) => kill(service)));
  for (const host of hosts) await host.remove();
  await cp?.stop();
  await s3?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe.skipIf(unavailable !== null)("worker hosts in network namespaces", () => {
  it("reach the database only through their link", () => {
    const host = hosts[0] as TestHost;
    const port = new URL(cp.t.url).port || "5432";
    const direct = spawnSync(...bash(host, `exec 3<>/dev/tcp/127.0.0.1/${port}`));
    expect(direct.status, "loopback inside the namespace has no Postgres").not.toBe(0);
    const routes = execFileSync(host.exec[0] as string, [...host.exec.slice(1), "ip", "-4", "route"], {
      encoding: "utf8",
    });
    expect(routes, "only the link's own network is routed").not.toContain("default");
    expect(routes).toContain(`src ${host.address}`);
  });
  it("restart a worker that dies, releasing what it held at once", async () => {
    const host = running.get("host-a") as Service;
    const first = host.ready;
    const row = await cp.t.db.worker.findUniqueOrThrow({ where: { id: first } });
    expect(row.host).toBe("host-a");
    process.kill(row.pid, "SIGKILL");
    await host.line(/^worker-host: worker process exited \(SIGKILL\); restarting it in 1 s \(restart 1\)$/);
    const again = await until(async () => registrations(host)[1], "the restarted worker", 60_000);
    expect(again).not.toBe(first);
    expect((await cp.t.db.worker.findUniqueOrThrow({ where: { id: first } })).status).toBe("OFFLINE");
  }, 90_000);

  it("resume a job on the other host from the store's checkpoint when its host dies", async () => {
    const steps = 8;
    const adapter = await cp.api<{ id: string }>(team.key, "POST", "/v1/adapters", {
      name: "across-hosts",
      baseModel: BASE,
      rank: 4,
    });
    const env = await cp.api<{ id: string }>(team.key, "POST", "/v1/environments", {
      name: "arithmetic",
      kind: "BUILTIN",
      builtin: "arithmetic",
      config: { maxOperand: 5 },
    });
    const created = await cp.api<{ id: string }>(team.key, "POST", "/v1/jobs", {
      kind: "RL",
      adapterId: adapter.body.id,
      environmentId: env.body.id,
      // keep-final retention (the default): intermediate objects go when the job ends.
      config: {
        steps,
        groupsPerStep: 2,
        groupSize: 4,
        seed: 3,
        checkpointEvery: 2,
        dropConstantGroups: false,
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    const jobId = created.body.id;
    const caught = await until(async () => {
      const job = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
      return job.status === "RUNNING" && job.step >= 3 && job.workerId ? job : undefined;
    }, "the job to pass step 3");
    const victimHost = (await cp.t.db.worker.findUniqueOrThrow({ where: { id: caught.workerId ?? "" } }))
      .host;
    const survivorHost = victimHost === "host-a" ? "host-b" : "host-a";
    // The whole host goes: its supervisor and its worker.
    await kill(running.get(victimHost) as Service);
    const killedAt = new Date();
    const resumePoint = await cp.t.db.checkpoint.findFirstOrThrow({
      where: { jobId },
      orderBy: { step: "desc" },
    });
    // An object the dead host had stored but not yet recorded is named by no row (and never will be).
    const rowsAtDeath = new Set(
      [
        ...(await cp.t.db.snapshot.findMany({ where: { jobId } })),
        ...(await cp.t.db.checkpoint.findMany({ where: { jobId } })),
      ].map((o) => o.path),
    );
    const orphans = (await objectsInBucket(`${PREFIX}/${team.id}/`)).filter((p) => !rowsAtDeath.has(p));
    expect(orphans.length, "at most the one publish in flight").toBeLessThanOrEqual(1);
    expect(resumePoint.step).toBeGreaterThanOrEqual(2);

    const job = await until(
      async () => {
        const row = await cp.t.db.job.findUniqueOrThrow({ where: { id: jobId } });
        return ["SUCCEEDED", "FAILED", "CANCELLED"].includes(row.status) ? row : undefined;
      },
      "the job to finish",
      150_000,
    );
    expect(job.error).toBeNull();
    expect(job.status).toBe("SUCCEEDED");
    expect((await cp.t.db.worker.findUniqueOrThrow({ where: { id: job.workerId ?? "" } })).host).toBe(
      survivorHost,
    );

    // Every step stored once; no optimizer step applied twice.
    for (let step = 0; step < steps; step++) {
      expect(await cp.t.db.trajectory.count({ where: { jobId, step } }), `step ${step}`).toBe(8);
      expect(await cp.t.db.metric.count({ where: { jobId, step, name: "reward/mean" } })).toBe(1);
    }
    // Steps before the checkpoint were kept from the dead host: the survivor restored that checkpoint from the store.
    const kept = await cp.t.db.trajectory.findMany({ where: { jobId, step: { lt: resumePoint.step } } });
    expect(kept.every((row) => row.createdAt < killedAt)).toBe(true);
    const redone = await cp.t.db.trajectory.findMany({ where: { jobId, step: { gte: resumePoint.step } } });
    expect(redone.every((row) => row.createdAt > killedAt)).toBe(true);
    const trained = await cp.t.db.metric.count({ where: { jobId, name: "step/value" } });
    expect(trained).toBe(steps);
    const adapterRow = await cp.t.db.adapter.findUniqueOrThrow({ where: { id: adapter.body.id } });
    expect(adapterRow.step).toBe(trained);

    // Retention: the bucket holds exactly the objects the rows still name (and what the dead host left unrecorded).
    const snapshots = await cp.t.db.snapshot.findMany({ where: { adapterId: adapter.body.id } });
    const checkpoints = await cp.t.db.checkpoint.findMany({ where: { adapterId: adapter.body.id } });
    expect([snapshots.length, checkpoints.length]).toEqual([1, 1]);
    expect(checkpoints[0]?.step).toBe(trained);
    const named = [...snapshots, ...checkpoints].map((o) => o.path).sort();
    for (const p of named) expect(p.startsWith(`s3://${s3.bucket}/${PREFIX}/${team.id}/`)).toBe(true);
    // (The worker deletes the objects right after the rows, so the job may be seen finished a moment before.)
    const expected = [...named, ...orphans].sort();
    const left = await until(
      async () => {
        const listed = await objectsInBucket(`${PREFIX}/${team.id}/`);
        return listed.length === expected.length ? listed : undefined;
      },
      "retention to delete the intermediate objects",
      15_000,
    ).catch(() => objectsInBucket(`${PREFIX}/${team.id}/`));
    expect(left).toEqual(expected);

    // The survivor kept what it read and wrote in its disk cache; no host kept a local store.
    expect((await readdir(path.join(dir, survivorHost, "store-cache"))).length).toBeGreaterThan(0);
    for (const host of ["host-a", "host-b"]) expect(existsSync(path.join(dir, host, "store"))).toBe(false);

    // And serves the final version from there.
    const handle = (
      await cp.api<{ handle: string }[]>(team.key, "GET", `/v1/adapters/${adapter.body.id}/versions`)
    ).body[0]?.handle;
    const sample = await cp.call<{ sequences: unknown[] }>(team.key, "/v1/sampling/sample", {
      policy: { handle },
      prompt: { chunks: [{ type: "encoded_text", tokens: [1, 2, 3] }] },
      params: { maxTokens: 2, seed: 1 },
    });
    expect(sample.sequences).toHaveLength(1);
  }, 240_000);
});

function bash(host: TestHost, script: string): [string, string[], { encoding: "utf8"; timeout: number }] {
  return [
    host.exec[0] as string,
    [...host.exec.slice(1), "bash", "-c", script],
    { encoding: "utf8", timeout: 5000 },
  ];
}

/** The objects under `prefix` (their manifests), as the store's paths. */
async function objectsInBucket(prefix: string): Promise<string[]> {
  const client = new S3Client({
    endpoint: s3.endpoint,
    region: "us-east-1",
    forcePathStyle: true,
    credentials: {
      accessKeyId: S3RVER_CREDENTIALS.AWS_ACCESS_KEY_ID,
      secretAccessKey: S3RVER_CREDENTIALS.AWS_SECRET_ACCESS_KEY,
    },
  });
  const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: prefix }));
  client.destroy();
  return (listed.Contents ?? [])
    .flatMap((o) =>
      o.Key?.endsWith("/.manifest.json")
        ? [`s3://${s3.bucket}/${o.Key.slice(0, -"/.manifest.json".length)}`]
        : [],
    )
    .sort();
}
