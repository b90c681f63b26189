// Fault 3: the object store fails writes. The worker stores snapshots and
// checkpoints in an S3-compatible bucket (s3rver) through a proxy that, once the
// job is mid-run, answers 500 to every PUT of the next two objects of the job's
// adapter (snapshots or checkpoints, whichever come), however often the store
// and its S3 client retry them, so each of those writes fails for good; later
// objects are stored. The job must still end SUCCEEDED with its history whole.
import { tmpdir } from "node:os";
import { openStore, readStoreEnv } from "@opentinker/store";
import { FaultyS3Proxy, type S3TestServer, startS3Server } from "@opentinker/store/testing";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { until } from "../control-plane/harness.ts";
import {
  expectIntactRun,
  type FaultPlane,
  finished,
  jobEnded,
  reachedStep,
  startFaultPlane,
  startRlJob,
} from "./harness.ts";

/** Objects whose writes fail for good: the first one, and the one written again in its place. */
const REFUSED_OBJECTS = 2;
const PREFIX = "faults";

let s3: S3TestServer;
let proxy: FaultyS3Proxy;
let plane: FaultPlane;
beforeAll(async () => {
  s3 = await startS3Server();
  proxy = await FaultyS3Proxy.start(s3.endpoint);
  // The web side reads the same bucket directly; only the worker's writes go through the proxy.
  const webStore = await openStore(readStoreEnv(s3.env(PREFIX)), { dataDir: tmpdir() });
  plane = await startFaultPlane({ workerEnv: s3.env(PREFIX, proxy.endpoint), start: { store: webStore } });
}, 60_000);
afterAll(async () => {
  await plane?.cp.stop();
  await proxy?.close();
  await s3?.stop();
});

describe("a job whose object store fails writes", () => {
  it("ends SUCCEEDED with contiguous steps, nothing stored twice, versions unbroken and its validation curve whole", async () => {
    const job = await startRlJob(plane, "store-faults");
    expect(await reachedStep(plane.cp, job.jobId, 3)).toBe(true);
    proxy.refuseObjects({ count: REFUSED_OBJECTS, match: new RegExp(`/${job.adapterId}/`) });
    await until(
      async () => (proxy.pending === 0 || (await jobEnded(plane.cp, job.jobId)) ? true : undefined),
      "the refused writes",
    );
    await finished(plane.cp, job.jobId);
    await expectIntactRun(plane.cp, job);
    // The fault really hit: two objects of the job's adapter were refused, and no row names either.
    expect(proxy.refusedObjects).toHaveLength(REFUSED_OBJECTS);
    const where = { adapterId: job.adapterId };
    const paths = [
      ...(await plane.cp.t.db.snapshot.findMany({ where, select: { path: true } })),
      ...(await plane.cp.t.db.checkpoint.findMany({ where, select: { path: true } })),
    ].map((row) => row.path);
    for (const object of proxy.refusedObjects) expect(paths).not.toContain(`s3:/${object}`);
  }, 240_000);
});
