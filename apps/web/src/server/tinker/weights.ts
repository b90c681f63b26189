// Saved weights over the Tinker protocol: training checkpoints (save_weights,
// load_weights: our saveState and loadState) and sampler checkpoints (our
// snapshots), listed, described, deleted, published, given a TTL or archived
// per training run. Owners change their objects; any team may read (describe,
// load, sample, archive) another team's object only while it is published.

import { randomUUID } from "node:crypto";
import { deleteObjectFiles } from "@opentinker/api";
import {
  type CheckpointKind,
  type DbTx,
  deleteSavedWeights,
  findSamplerCheckpoint,
  findTrainingCheckpoint,
  getTrainingRun,
  listSavedWeights,
  recordAuditEvent,
  type SavedWeightsRow,
  savedWeightsSpec,
  setSavedWeightsExpiry,
  setSavedWeightsPublished,
} from "@opentinker/db";
import { formatStatePath, formatTinkerPath, parseTinkerPath, type TinkerPath } from "@opentinker/protocol";
import { TinkerError } from "./convert.ts";
import { pageQuery, ZLoadWeightsBody, ZSaveWeightsBody, ZTinkerPathBody, ZTtlBody } from "./rest-schemas.ts";
import { parseBody, type Scope } from "./scope.ts";
import { signLink } from "./signed-links.ts";
import { trainingCall } from "./training.ts";

type WeightsKind = TinkerPath["kind"];

const kindOf = (weights: WeightsKind): CheckpointKind => (weights === "weights" ? "training" : "sampler");
const weightsOf = (kind: CheckpointKind): WeightsKind =>
  kind === "training" ? "weights" : "sampler_weights";

const notFound = (what: string): never => {
  throw new TinkerError(404, `${what} not found`);
};

/** A `tinker://<model>/{weights,sampler_weights}/<name>` path, or a 400 naming the field. */
export function tinkerPathOf(path: string, field: string, only?: WeightsKind): TinkerPath {
  const parsed = parseTinkerPath(path);
  if (!parsed || (only && parsed.kind !== only))
    throw new TinkerError(
      400,
      `${field}: expected tinker://<model>/${only ?? "{weights,sampler_weights}"}/<name>, got "${path}"`,
    );
  return parsed;
}

export function presentCheckpoint(row: SavedWeightsRow) {
  const kind = weightsOf(row.kind);
  return {
    checkpoint_id: `${kind}/${row.name}`,
    checkpoint_type: row.kind,
    time: row.createdAt.toISOString(),
    tinker_path: formatTinkerPath({ model: row.adapterId, kind, name: row.name }),
    size_bytes: row.sizeBytes,
    public: row.publishedAt !== null,
    expires_at: row.expiresAt?.toISOString() ?? null,
  };
}

/** save_weights: a training checkpoint under the given name (or a fresh one). */
export function saveWeights(scope: Scope, body: unknown) {
  const input = parseBody(ZSaveWeightsBody, body);
  return trainingCall(scope, "SAVE_STATE", input.model_id, input.seq_id, {
    adapterId: input.model_id,
    name: input.path ?? `checkpoint-${randomUUID().slice(0, 8)}`,
    replace: input.overwrite,
    ...(input.ttl_seconds ? { ttlSeconds: input.ttl_seconds } : {}),
  });
}

/** load_weights: a training checkpoint of the team's (the model's own or another run's), or a published one. */
export async function loadWeights(scope: Scope, body: unknown) {
  const input = parseBody(ZLoadWeightsBody, body);
  if (!input.model_id) throw new TinkerError(400, "model_id: required (create the model first)");
  const source = tinkerPathOf(input.path, "path", "weights");
  const reader = { teamId: scope.ctx.caller.teamId, published: true };
  const found = await findTrainingCheckpoint(scope.ctx.db, reader, source.model, source.name);
  if (!found) return notFound(`path: ${input.path}`);
  return trainingCall(scope, "LOAD_STATE", input.model_id, input.seq_id, {
    adapterId: input.model_id,
    path: formatStatePath({ team: found.teamSlug, adapter: source.model, name: source.name }),
    optimizer: input.optimizer,
  });
}

/** weights_info: what saved weights were trained as, for the caller's team's or a published object. */
export async function weightsInfo(scope: Scope, body: unknown) {
  const { tinker_path } = parseBody(ZTinkerPathBody, body);
  const path = tinkerPathOf(tinker_path, "tinker_path");
  const reader = { teamId: scope.ctx.caller.teamId, published: true };
  const spec = await savedWeightsSpec(scope.ctx.db, reader, kindOf(path.kind), path.model, path.name);
  if (!spec) return notFound(`tinker_path: ${tinker_path}`);
  const lora = spec.kind === "LORA";
  return {
    base_model: spec.baseModel.name,
    is_lora: lora,
    lora_rank: lora ? spec.rank : null,
    train_unembed: lora ? spec.trainUnembed : null,
    train_mlp: lora ? spec.trainMlp : null,
    train_attn: lora ? spec.trainAttn : null,
  };
}

async function ownRun(scope: Scope, run: string) {
  if (!(await getTrainingRun(scope.ctx.db, scope.ctx.caller.teamId, run))) notFound(`training run ${run}`);
}

/** Every saved weights of one training run of the team, newest first. */
export async function listRunCheckpoints(scope: Scope, run: string) {
  await ownRun(scope, run);
  const { rows } = await listSavedWeights(scope.ctx.db, scope.ctx.caller.teamId, run, {
    limit: 10_000,
    offset: 0,
  });
  return { checkpoints: rows.map(presentCheckpoint), cursor: null };
}

/** Every saved weights of the team, newest first, a page at a time. */
export async function listTeamCheckpoints(scope: Scope, query: unknown) {
  const { limit, offset } = parseBody(pageQuery(100), query);
  const { rows, total } = await listSavedWeights(scope.ctx.db, scope.ctx.caller.teamId, null, {
    limit,
    offset,
  });
  return { checkpoints: rows.map(presentCheckpoint), cursor: { offset, limit, total_count: total } };
}

/** Names one saved weights of a run from the route (`…/checkpoints/{weights|sampler_weights}/<name>`). */
export interface WeightsRef {
  run: string;
  weights: string;
  name: string;
}

function weightsRef(ref: WeightsRef): TinkerPath {
  if (ref.weights !== "weights" && ref.weights !== "sampler_weights")
    throw new TinkerError(
      400,
      `checkpoint_id: expected weights/<name> or sampler_weights/<name>, got "${ref.weights}/${ref.name}"`,
    );
  return { model: ref.run, kind: ref.weights, name: ref.name };
}

/** Saved weights the reader may see (the owner's team, or any team while published). */
async function readable(scope: Scope, path: TinkerPath, published: boolean) {
  const reader = { teamId: scope.ctx.caller.teamId, published };
  const find = path.kind === "weights" ? findTrainingCheckpoint : findSamplerCheckpoint;
  const found = await find(scope.ctx.db, reader, path.model, path.name);
  if (!found) return notFound(`checkpoint ${formatTinkerPath(path)}`);
  return found;
}

/** Records what was done to saved weights, in the transaction of the change when there is one. */
export async function auditWeights(
  db: DbTx,
  teamId: string,
  event: string,
  path: TinkerPath,
  purpose?: string,
) {
  await recordAuditEvent(db, teamId, {
    event,
    modelId: path.model,
    tinkerPath: formatTinkerPath(path),
    purpose: purpose ?? null,
  });
}

export async function deleteCheckpoint(scope: Scope, ref: WeightsRef): Promise<void> {
  const path = weightsRef(ref);
  const found = await readable(scope, path, false);
  const teamId = scope.ctx.caller.teamId;
  const deleted = await scope.ctx.db.$transaction(async (tx) => {
    const row = await deleteSavedWeights(tx, teamId, kindOf(path.kind), found.id);
    if (row) await auditWeights(tx, teamId, "checkpoint_deleted", path);
    return row;
  });
  if (!deleted) notFound(`checkpoint ${formatTinkerPath(path)}`);
  await deleteObjectFiles(scope.ctx.store, found.path);
}

export async function setPublished(scope: Scope, ref: WeightsRef, published: boolean): Promise<void> {
  const path = weightsRef(ref);
  const found = await readable(scope, path, false);
  const teamId = scope.ctx.caller.teamId;
  await scope.ctx.db.$transaction(async (tx) => {
    await setSavedWeightsPublished(tx, teamId, kindOf(path.kind), found.id, published);
    await auditWeights(tx, teamId, published ? "checkpoint_published" : "checkpoint_unpublished", path);
  });
}

export async function setTtl(scope: Scope, ref: WeightsRef, body: unknown): Promise<void> {
  const path = weightsRef(ref);
  const { ttl_seconds } = parseBody(ZTtlBody, body);
  const found = await readable(scope, path, false);
  const expiresAt = ttl_seconds === null ? null : new Date(Date.now() + ttl_seconds * 1000);
  const teamId = scope.ctx.caller.teamId;
  await scope.ctx.db.$transaction(async (tx) => {
    await setSavedWeightsExpiry(tx, teamId, kindOf(path.kind), found.id, expiresAt);
    const purpose = ttl_seconds === null ? "no expiry" : `expires in ${ttl_seconds} s`;
    await auditWeights(tx, teamId, "checkpoint_ttl_set", path, purpose);
  });
}

/** A link to a tar of the saved weights' PEFT files (the owner's, or published ones). */
export async function archiveUrl(scope: Scope, ref: WeightsRef) {
  const path = weightsRef(ref);
  await readable(scope, path, true);
  const link = signLink(scope.secret, scope.origin, {
    kind: "archive",
    team: scope.ctx.caller.teamId,
    model: path.model,
    weights: path.kind,
    name: path.name,
  });
  return { url: link.url, expires: link.expires.toISOString() };
}
