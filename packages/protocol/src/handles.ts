// The opaque names a client gets back and hands in again (C2): sampler handles
// of published snapshots and paths of saved training states. Formatted and
// parsed here only; a service resolves a parsed name within the caller's team.
import { z } from "zod";

const TEAM = "[a-z0-9][a-z0-9-]*";
const ADAPTER = "[A-Za-z0-9_-]+";
const HANDLE = new RegExp(`^opentinker://(${TEAM})/(${ADAPTER})/sampler/([1-9][0-9]*)$`);
const STATE_PATH = new RegExp(`^opentinker://(${TEAM})/(${ADAPTER})/state/([^/]+)$`);

const HANDLE_FORM = "opentinker://<team>/<adapter>/sampler/<version>";
const STATE_PATH_FORM = "opentinker://<team>/<adapter>/state/<name>";

/**
 * A name a client gives a saved state or snapshot: it becomes part of an opaque
 * path, so no separators, quotes, leading dots or "..".
 */
export const ZObjectName = z
  .string()
  .min(1)
  .max(128)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._-]*$/,
    "use letters, digits, '.', '_' and '-', starting with a letter or digit",
  )
  .refine((name) => !name.includes(".."), "must not contain '..'");

/** `opentinker://<team>/<adapter>/sampler/<version>`: an immutable policy snapshot (C2). */
export const ZSamplerHandle = z.string().regex(HANDLE, `expected ${HANDLE_FORM}`);

export interface SamplerHandle {
  team: string;
  adapter: string;
  version: number;
}

export function formatSamplerHandle(h: SamplerHandle): string {
  return `opentinker://${h.team}/${h.adapter}/sampler/${h.version}`;
}

export function parseSamplerHandle(handle: string): SamplerHandle {
  const match = HANDLE.exec(handle);
  if (!match) throw new RangeError(`not a sampler handle: "${handle}" (expected ${HANDLE_FORM})`);
  return { team: match[1] as string, adapter: match[2] as string, version: Number(match[3]) };
}

/** A saved training state: what saveState returns and loadState takes. */
export interface StatePath {
  team: string;
  adapter: string;
  name: string;
}

export const ZStatePath = z
  .string()
  .max(1024)
  .refine((path) => parseStatePath(path) !== null, `expected ${STATE_PATH_FORM}`);

export function formatStatePath(p: StatePath): string {
  return `opentinker://${p.team}/${p.adapter}/state/${p.name}`;
}

/** The parts of a state path, or null when it is not one (or names an invalid state). */
export function parseStatePath(path: string): StatePath | null {
  const match = STATE_PATH.exec(path);
  if (!match || !ZObjectName.safeParse(match[3]).success) return null;
  return { team: match[1] as string, adapter: match[2] as string, name: match[3] as string };
}

/** A server-side job's checkpoint after `step` steps: how a resumed job finds where to go on from. */
export interface JobCheckpointName {
  jobId: string;
  step: number;
}

const JOB_CHECKPOINT = /^job-(.+)-step-(0|[1-9][0-9]*)$/;

export function formatJobCheckpointName(c: JobCheckpointName): string {
  return `job-${c.jobId}-step-${c.step}`;
}

/** The job and step a checkpoint name stands for, or null when it is not a job's checkpoint. */
export function parseJobCheckpointName(name: string): JobCheckpointName | null {
  const match = JOB_CHECKPOINT.exec(name);
  return match ? { jobId: match[1] as string, step: Number(match[2]) } : null;
}

/**
 * The checkpoint an idle adapter's state is saved under when its worker lets
 * it go to make room for another (one per adapter, replaced each time); its
 * next call restores it.
 */
export const RELEASED_CHECKPOINT = "auto-released";

/** What a sampling request names: a published snapshot, or the bare base model. Never weights. */
export const ZPolicyRef = z.union([
  z.object({ handle: ZSamplerHandle }),
  z.object({ baseModel: z.string().min(1) }),
]);
export type PolicyRef = z.infer<typeof ZPolicyRef>;

/**
 * The paths the Tinker protocol hands out (`tinker://<model>/sampler_weights/<name>`
 * and `.../weights/<name>`): the model is an adapter id, the name one the client
 * chose. A service resolves them within the caller's team, like our own handles.
 */
export interface TinkerPath {
  model: string;
  kind: "weights" | "sampler_weights";
  name: string;
}

const TINKER_PATH = new RegExp(`^tinker://(${ADAPTER})/(weights|sampler_weights)/([^/]+)$`);

export function formatTinkerPath(p: TinkerPath): string {
  return `tinker://${p.model}/${p.kind}/${p.name}`;
}

/** The parts of a Tinker path, or null when it is not one (or names an invalid object). */
export function parseTinkerPath(path: string): TinkerPath | null {
  const match = TINKER_PATH.exec(path);
  if (!match || !ZObjectName.safeParse(match[3]).success) return null;
  return { model: match[1] as string, kind: match[2] as TinkerPath["kind"], name: match[3] as string };
}
