// What a signed link downloads (signed-links.ts): a checkpoint's archive, a
// plain tar of its PEFT files plus an empty `checkpoint_complete` (what the
// SDK's CLI and the cookbook extract), or a session's trace in the Trace Event
// JSON that ui.perfetto.dev opens. The object is resolved again for the team
// the link was made for, so a link outlives neither the object nor that
// team's right to read it.
import { Readable } from "node:stream";
import { readObjectFiles } from "@opentinker/api";
import { type Db, findSamplerCheckpoint, findTrainingCheckpoint, sessionRequests } from "@opentinker/db";
import { formatTinkerPath } from "@opentinker/protocol";
import type { ObjectStore } from "@opentinker/store";
import { pack } from "tar-stream";
import { TinkerError } from "./convert.ts";
import type { Reply } from "./scope.ts";
import { type LinkTarget, verifyLink } from "./signed-links.ts";
import { auditWeights } from "./weights.ts";

/** The optimizer state is ours to resume from, not part of the exported adapter. */
const NOT_EXPORTED = new Set(["training_state.safetensors"]);

async function archive(
  db: Db,
  store: ObjectStore | null,
  target: Extract<LinkTarget, { kind: "archive" }>,
): Promise<Reply> {
  const reader = { teamId: target.team, published: true };
  const find = target.weights === "weights" ? findTrainingCheckpoint : findSamplerCheckpoint;
  const found = await find(db, reader, target.model, target.name);
  const path = { model: target.model, kind: target.weights, name: target.name } as const;
  if (!found) throw new TinkerError(404, `checkpoint ${formatTinkerPath(path)} not found`);
  const files = await readObjectFiles(store, found);
  const tar = pack();
  for (const [name, bytes] of files)
    if (!NOT_EXPORTED.has(name)) tar.entry({ name, mode: 0o644 }, Buffer.from(bytes));
  tar.entry({ name: "checkpoint_complete", mode: 0o644 }, "");
  tar.finalize();
  await auditWeights(db, target.team, "checkpoint_downloaded", path);
  return {
    file: { contentType: "application/x-tar", filename: `${target.name}.tar`, body: Readable.from(tar) },
  };
}

/** A session's training and sampling calls as complete events, one track per training run. */
async function trace(db: Db, target: Extract<LinkTarget, { kind: "trace" }>): Promise<Reply> {
  const requests = await sessionRequests(db, target.team, target.session);
  const runs = [...new Set(requests.map((r) => r.adapterId))];
  const us = (d: Date) => d.getTime() * 1000;
  const traceEvents = requests.flatMap((r) => {
    const tid = runs.indexOf(r.adapterId) + 1;
    const queued = { name: `${r.kind} queued`, cat: "queue", ph: "X", pid: 1, tid };
    const events = [];
    if (r.startedAt) events.push({ ...queued, ts: us(r.createdAt), dur: us(r.startedAt) - us(r.createdAt) });
    if (r.startedAt && r.finishedAt)
      events.push({
        name: r.kind,
        cat: "run",
        ph: "X",
        pid: 1,
        tid,
        ts: us(r.startedAt),
        dur: us(r.finishedAt) - us(r.startedAt),
        args: { request: r.id, status: r.status },
      });
    return events;
  });
  const names = runs.map((run, i) => ({
    name: "thread_name",
    ph: "M",
    pid: 1,
    tid: i + 1,
    args: { name: `run ${run}` },
  }));
  const body = Buffer.from(
    JSON.stringify({ traceEvents: [...names, ...traceEvents], displayTimeUnit: "ms" }),
  );
  return { file: { contentType: "application/json", filename: `${target.session}.pftrace`, body } };
}

/** The download a link's token names; a bad or expired link is a 403. */
export function download(db: Db, store: ObjectStore | null, secret: string, token: string): Promise<Reply> {
  const target = verifyLink(secret, token);
  return target.kind === "archive" ? archive(db, store, target) : trace(db, target);
}
