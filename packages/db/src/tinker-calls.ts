// Training calls over the Tinker protocol, in the client's seq_id order. The
// SDK numbers every training call of a model 1, 2, … and sends a batch's chunks
// concurrently (the first one last), so a call may arrive before the one it
// follows: it then waits as a row (held) until its predecessors come.
//
// A call is recorded under an id made of its model and seq_id, which is also the
// id of the Request it becomes, and inserting that Request claims the call in
// the same statement (a trigger, prisma/migrations/20261206080100_tinker_call_expiry).
// So, with no lock and no transaction:
// - order: a call is queued only once every lower seq_id is settled (queued or
//   refused) as seen after that settling committed, so its Request's seq is later;
// - exactly once: a (model, seq_id) is one call and at most one Request; two web
//   processes releasing the same call race on its claim, and one loses (OT412);
// - nothing runs behind a refusal: a call answered with an error the SDK sends
//   again with the same seq_id (429, 503, 5xx) is withdrawn (its row deleted); a
//   call refused for good (a bad input, a deleted model) keeps only its refusal,
//   so its seq_id is settled and the calls after it go on (a bad call that came
//   early is refused at once, its refusal recorded when its turn comes); and a
//   withdrawn, refused or expired call can never be claimed.
// Every step is one statement of its own, so no path holds a pool connection
// while it waits for another. A call that comes in order costs three: record,
// queue (claiming it), look for a held call after it.
//
// Expiry: once the oldest call held above a missing seq_id has waited
// TINKER_CALL_EXPIRY_MS, every call then held above that seq_id is refused (409,
// naming it) and none of them runs. The calls after them are in order again; the
// missing call, should it come later, is refused as late.
import { randomUUID } from "node:crypto";
import type { Db, DbTx } from "./client.ts";
import { tinkerCallExpiryMs } from "./env.ts";
import { NotFoundError, postgresCause, QuotaExceededError, UnknownTeamError } from "./errors.ts";
import { Prisma, type RequestKind } from "./generated/prisma/client.ts";
import { AdapterTooLargeError, NoWorkerError } from "./placement.ts";
import { enqueueTrainingRequest, TRAINING_KINDS, type TrainingRequestKind } from "./requests.ts";

/** Every call's id (and its Request's): the claim trigger recognises calls by this prefix. */
const CALL_ID_PREFIX = "tinker-call-";
/** The claim trigger's refusal: the call is already queued, refused, expired or withdrawn. */
const CLAIMED_SQLSTATE = "OT412";
/** The status of a call refused for its order: held past the expiry, or come after its successors expired. */
const OUT_OF_ORDER_STATUS = 409;

export const tinkerCallId = (adapterId: string, seqId: number) => `${CALL_ID_PREFIX}${adapterId}-${seqId}`;

export interface TinkerCallState {
  id: string;
  adapterId: string;
  seqId: number;
  kind: RequestKind;
  /** The Request it became, once queued. */
  requestId: string | null;
  /** Why it was refused instead (an HTTP status and message). */
  errorStatus: number | null;
  error: string | null;
  /** Refused when it came (answered so), recorded as its refusal when its turn comes. */
  pendingErrorStatus: number | null;
  pendingError: string | null;
}

const callSelect = {
  id: true,
  adapterId: true,
  seqId: true,
  kind: true,
  requestId: true,
  errorStatus: true,
  error: true,
  pendingErrorStatus: true,
  pendingError: true,
} as const;

export interface TinkerRefusal {
  status: number;
  message: string;
}

/** A call sent now: its future (queued or held, or the same call sent before), or the refusal it got. */
export type TinkerCallAnswer = { future: string } | { refused: TinkerRefusal };

/** Where a recorded call stands: queued (as `requestId`), refused, or waiting for its turn. */
export type TinkerCallProgress =
  | { requestId: string }
  | { refused: TinkerRefusal }
  /** `predecessor`: a lower seq_id has not come; `busy`: it is next, and the service was busy (it is tried again). */
  | { waiting: "predecessor" | "busy" };

interface NewTinkerCall {
  adapterId: string;
  /** Null: the call is not ordered (queued as it comes, under a fresh id). */
  seqId: number | null;
  kind: TrainingRequestKind;
  /** The input its Request takes, already checked; or why the check refused it. */
  checked: { payload: object } | { refusal: TinkerRefusal };
}

/** A call due to become a Request (or, refused when it came, its refusal). */
interface DueCall {
  id: string;
  kind: RequestKind;
  input: Prisma.JsonValue;
  pendingErrorStatus: number | null;
  pendingError: string | null;
}

/** A call's state as recorded. */
type Recorded = Pick<
  TinkerCallState,
  "id" | "requestId" | "errorStatus" | "error" | "pendingErrorStatus" | "pendingError"
>;

const settled = Prisma.sql`("requestId" IS NOT NULL OR "errorStatus" IS NOT NULL)`;

/** The adapter's highest settled seq_id (0 when none), as a one-row query with column `last`. */
const frontier = (teamId: string, adapterId: string) => Prisma.sql`
  SELECT coalesce(max("seqId"), 0) AS last FROM "TinkerCall"
  WHERE "adapterId" = ${adapterId} AND "teamId" = ${teamId} AND ${settled}`;

/** The refusal a call got: recorded, or (not yet its turn) given when it came; null when it has none. */
function refusalOf(call: Omit<Recorded, "id" | "requestId">): TinkerRefusal | null {
  if (call.errorStatus !== null) return { status: call.errorStatus, message: call.error ?? "refused" };
  if (call.pendingErrorStatus !== null)
    return { status: call.pendingErrorStatus, message: call.pendingError ?? "refused" };
  return null;
}

/** What a recorded call answers: its refusal, else its future (queued or held). */
function answerOf(call: Recorded): TinkerCallAnswer {
  const refusal = refusalOf(call);
  return refusal ? { refused: refusal } : { future: call.id };
}

/**
 * A training call of this team's adapter in the model's seq_id order: queued at
 * once when every lower seq_id is settled, else held. A call sent again is the
 * one recorded first (the same future, or the same refusal). Nothing of a
 * refused call can run; another team's adapter answers as a missing one
 * (NotFoundError).
 */
export async function submitTinkerCall(
  db: Db,
  teamId: string,
  call: NewTinkerCall,
): Promise<TinkerCallAnswer> {
  const { checked } = call;
  if (call.seqId === null) {
    if ("refusal" in checked) return { refused: checked.refusal };
    const id = randomUUID();
    const due = { id, kind: call.kind, input: checked.payload as Prisma.JsonValue };
    const outcome = await queueCall(db, teamId, call.adapterId, { ...due, ...NOT_REFUSED });
    return typeof outcome === "object" ? { refused: outcome.refusal } : { future: id };
  }
  const seqId = call.seqId;
  const recorded = await recordCall(db, teamId, { ...call, seqId });
  if ("late" in recorded) return { refused: recorded.late };
  const { last, ...row } = recorded;
  if (row.requestId !== null || row.errorStatus !== null) return answerOf(row);
  if (seqId !== last + 1) {
    // Held: a second look (a fresh snapshot) catches a predecessor settled meanwhile, or a gap expired.
    const now = await expireHeldCalls(db, teamId, call.adapterId);
    if (now.expired.includes(row.id) || seqId !== now.last + 1) return answerOf(row);
  }
  // Its turn. The input is this send's when it passed the check; else the row's, read back.
  if (row.pendingErrorStatus === null && "payload" in checked)
    return queueOwnCall(db, teamId, call.adapterId, {
      ...row,
      kind: call.kind,
      input: checked.payload as Prisma.JsonValue,
    });
  await releaseHeldCalls(db, teamId, call.adapterId);
  const now = await findTinkerCall(db, teamId, row.id);
  return now
    ? answerOf(now)
    : { refused: { status: 503, message: "the call was withdrawn meanwhile: send it again" } };
}

const NOT_REFUSED = { pendingErrorStatus: null, pendingError: null };

/**
 * Records the call unless a later one is already settled (it would come too
 * late); returns it as recorded (sent before, or now) and the highest settled
 * seq_id when it was recorded.
 */
async function recordCall(
  db: Db,
  teamId: string,
  call: NewTinkerCall & { seqId: number },
): Promise<{ late: TinkerRefusal } | (Recorded & { last: number })> {
  const input = "payload" in call.checked ? JSON.stringify(call.checked.payload) : null;
  const refusal = "refusal" in call.checked ? call.checked.refusal : null;
  // A copy inserted by a concurrent send is not in this statement's snapshot: the second try sees it.
  for (let attempt = 1; ; attempt++) {
    const [row] = await db.$queryRaw<({ exists: boolean; last: number } & Recorded)[]>`
      WITH adapter AS (
        SELECT id FROM "Adapter" WHERE id = ${call.adapterId} AND "teamId" = ${teamId} AND status = 'ACTIVE'),
      settled AS (${frontier(teamId, call.adapterId)}),
      inserted AS (
        INSERT INTO "TinkerCall" (id, "teamId", "adapterId", "seqId", kind, input, "pendingErrorStatus", "pendingError")
        SELECT ${tinkerCallId(call.adapterId, call.seqId)}, ${teamId}, adapter.id, ${call.seqId}::int,
          ${call.kind}::"RequestKind", ${input}::jsonb, ${refusal?.status ?? null}::int, ${refusal?.message ?? null}
        FROM adapter, settled WHERE ${call.seqId}::int > settled.last
        ON CONFLICT DO NOTHING
        RETURNING ${recordedColumns}),
      found AS (
        SELECT ${recordedColumns} FROM inserted
        UNION ALL
        SELECT ${recordedColumns} FROM "TinkerCall"
        WHERE "adapterId" = ${call.adapterId} AND "teamId" = ${teamId} AND "seqId" = ${call.seqId}::int)
      SELECT EXISTS (SELECT 1 FROM adapter) AS exists, settled.last, f.*
      FROM settled LEFT JOIN (SELECT * FROM found LIMIT 1) f ON true`;
    if (!row?.exists) throw new NotFoundError(`model ${call.adapterId} not found`);
    if (row.id !== null) {
      const { exists: _, ...recorded } = row;
      return recorded;
    }
    if (call.seqId <= row.last)
      return {
        late: {
          status: OUT_OF_ORDER_STATUS,
          message: `seq_id ${call.seqId} of model ${call.adapterId} came after seq_id ${row.last} was settled (the calls after it expired waiting for it); it was not run`,
        },
      };
    if (attempt === 2)
      throw new Error(`recordCall: call ${call.seqId} of ${call.adapterId} was neither recorded nor found`);
  }
}

const recordedColumns = Prisma.sql`id, "requestId", "errorStatus", error, "pendingErrorStatus", "pendingError"`;

/**
 * Queues the caller's own call, whose turn it is, then any held calls after
 * it. A refusal the SDK answers by sending the call again (busy, or a failure)
 * withdraws it; any other is recorded as its answer, and the calls after it go
 * on. Should a concurrent release have queued it meanwhile, the answer is its future.
 */
async function queueOwnCall(
  db: Db,
  teamId: string,
  adapterId: string,
  call: DueCall,
): Promise<TinkerCallAnswer> {
  let outcome: QueueOutcome;
  try {
    outcome = await queueCall(db, teamId, adapterId, call);
  } catch (error) {
    const left = await withdraw(db, teamId, call.id);
    if ("future" in left) return left;
    throw error;
  }
  if (outcome === "taken") {
    const now = await findTinkerCall(db, teamId, call.id);
    return now
      ? answerOf(now)
      : { refused: { status: 503, message: "the call was withdrawn meanwhile: send it again" } };
  }
  if (outcome !== "queued" && outcome.retryable) return withdraw(db, teamId, call.id, outcome.refusal);
  if (outcome !== "queued") await refuseHeldCall(db, teamId, call.id, outcome.refusal);
  await releaseHeldCalls(db, teamId, adapterId);
  return outcome === "queued" ? { future: call.id } : { refused: outcome.refusal };
}

type QueueOutcome = "queued" | "taken" | { refusal: TinkerRefusal; retryable: boolean };

/** Makes a due call a Request under the call's own id (the insert claims it), or settles its refusal. */
async function queueCall(db: Db, teamId: string, adapterId: string, call: DueCall): Promise<QueueOutcome> {
  if (call.pendingErrorStatus !== null)
    return {
      refusal: { status: call.pendingErrorStatus, message: call.pendingError ?? "refused" },
      retryable: false,
    };
  const kind = TRAINING_KINDS.find((k) => k === call.kind);
  if (!kind)
    return { refusal: { status: 400, message: `${call.kind} is not a training call` }, retryable: false };
  try {
    await enqueueTrainingRequest(db, teamId, {
      adapterId,
      kind,
      payload: call.input as Prisma.InputJsonValue,
      requestId: call.id,
    });
    return "queued";
  } catch (error) {
    if (postgresCause(error)?.code === CLAIMED_SQLSTATE) return "taken";
    const message = error instanceof Error ? error.message : String(error);
    // Busy: the quota frees as calls finish; a worker makes room.
    if (error instanceof QuotaExceededError) return { refusal: { status: 429, message }, retryable: true };
    if (error instanceof NoWorkerError) return { refusal: { status: 503, message }, retryable: true };
    if (error instanceof NotFoundError) return { refusal: { status: 404, message }, retryable: false };
    if (error instanceof AdapterTooLargeError) return { refusal: { status: 400, message }, retryable: false };
    if (error instanceof UnknownTeamError) return { refusal: { status: 401, message }, retryable: false };
    throw error;
  }
}

/**
 * Queues held calls in seq_id order while the next one is due. A busy refusal
 * (or a failure) stops: that call stays next in line, tried again when its
 * future is polled. Another refusal is recorded as the call's answer and the
 * release goes on. A call claimed by another release stops this one (that one goes on).
 */
async function releaseHeldCalls(db: Db, teamId: string, adapterId: string): Promise<void> {
  try {
    for (
      let call = await nextDueCall(db, teamId, adapterId);
      call;
      call = await nextDueCall(db, teamId, adapterId)
    ) {
      const outcome = await queueCall(db, teamId, adapterId, call);
      if (outcome === "taken" || (outcome !== "queued" && outcome.retryable)) return;
      if (outcome !== "queued") await refuseHeldCall(db, teamId, call.id, outcome.refusal);
    }
  } catch (error) {
    console.error(
      `tinker: releasing calls of ${adapterId} stopped: ${error instanceof Error ? error.message : error}`,
    );
  }
}

/** The unsettled call right after the adapter's highest settled seq_id, or null. */
async function nextDueCall(db: DbTx, teamId: string, adapterId: string): Promise<DueCall | null> {
  const [call] = await db.$queryRaw<DueCall[]>`
    SELECT id, kind::text AS kind, input, "pendingErrorStatus", "pendingError" FROM "TinkerCall"
    WHERE "adapterId" = ${adapterId} AND "teamId" = ${teamId} AND NOT ${settled}
      AND "seqId" = (SELECT last + 1 FROM (${frontier(teamId, adapterId)}) f)`;
  return call ?? null;
}

/** Records a held call's refusal (its future answers it), unless it was settled meanwhile. */
async function refuseHeldCall(db: DbTx, teamId: string, id: string, refusal: TinkerRefusal): Promise<void> {
  await db.$executeRaw`
    UPDATE "TinkerCall" SET "errorStatus" = ${refusal.status}::int, error = ${refusal.message}, input = NULL
    WHERE id = ${id} AND "teamId" = ${teamId} AND NOT ${settled}`;
}

/**
 * Takes back an unsettled call that is answered with `refusal` (so it can never
 * be queued). When it was settled meanwhile (a concurrent release queued it),
 * the answer is what it became instead.
 */
async function withdraw(
  db: DbTx,
  teamId: string,
  id: string,
  refusal: TinkerRefusal = { status: 500, message: "internal error" },
): Promise<TinkerCallAnswer> {
  const deleted = await db.$executeRaw`
    DELETE FROM "TinkerCall" WHERE id = ${id} AND "teamId" = ${teamId} AND NOT ${settled}`;
  const call = deleted === 1 ? null : await findTinkerCall(db, teamId, id);
  return call ? answerOf(call) : { refused: refusal };
}

/**
 * Refuses every call held above a missing seq_id once the oldest of them has
 * waited the expiry; none of them will run. Returns their ids and the highest
 * settled seq_id before.
 */
async function expireHeldCalls(
  db: DbTx,
  teamId: string,
  adapterId: string,
): Promise<{ last: number; expired: string[] }> {
  const expiryMs = tinkerCallExpiryMs();
  const rows = await db.$queryRaw<{ last: number; id: string | null }[]>`
    WITH settled AS (${frontier(teamId, adapterId)}),
    held AS (
      SELECT c.id, c."seqId", c."createdAt" FROM "TinkerCall" c, settled
      WHERE c."adapterId" = ${adapterId} AND c."teamId" = ${teamId} AND c."seqId" > settled.last
        AND c."requestId" IS NULL AND c."errorStatus" IS NULL),
    gap AS (
      SELECT settled.last + 1 AS missing FROM settled
      WHERE NOT EXISTS (SELECT 1 FROM held WHERE held."seqId" = settled.last + 1)
        AND (SELECT min("createdAt") FROM held) < now() - make_interval(secs => ${expiryMs / 1000}::float8)),
    expired AS (
      UPDATE "TinkerCall" c SET "errorStatus" = ${OUT_OF_ORDER_STATUS}::int, input = NULL,
        error = format('seq_id %s of model %s did not come within %s s; this call (seq_id %s) follows it, so it was not run',
          gap.missing, c."adapterId", ${String(expiryMs / 1000)}::text, c."seqId")
      FROM gap, held
      WHERE c.id = held.id AND c."requestId" IS NULL AND c."errorStatus" IS NULL
      RETURNING c.id)
    SELECT settled.last, expired.id FROM settled LEFT JOIN expired ON true`;
  return {
    last: rows[0]?.last ?? 0,
    expired: rows.flatMap((r) => (r.id === null ? [] : [r.id])),
  };
}

/**
 * Where a call of this team stands, moving its model's calls on first: held
 * calls past the expiry are refused, and calls now due are queued. Null when
 * the team has no such call.
 */
export async function pollTinkerCall(db: Db, teamId: string, id: string): Promise<TinkerCallProgress | null> {
  const before = await findTinkerCall(db, teamId, id);
  if (!before) return null;
  const known = progressOf(before);
  if (known) return known;
  await expireHeldCalls(db, teamId, before.adapterId);
  await releaseHeldCalls(db, teamId, before.adapterId);
  const after = await findTinkerCall(db, teamId, id);
  if (!after) return null;
  const now = progressOf(after);
  if (now) return now;
  const [due] = await db.$queryRaw<{ due: boolean }[]>`
    SELECT ${after.seqId}::int = (SELECT last + 1 FROM (${frontier(teamId, after.adapterId)}) f) AS due`;
  return { waiting: due?.due ? "busy" : "predecessor" };
}

/** A call's progress when it is queued or refused; null while it waits. */
function progressOf(call: TinkerCallState): TinkerCallProgress | null {
  if (call.requestId !== null) return { requestId: call.requestId };
  const refusal = refusalOf(call);
  return refusal ? { refused: refusal } : null;
}

/** A recorded call of this team by its id, or null. */
export function findTinkerCall(db: DbTx, teamId: string, id: string): Promise<TinkerCallState | null> {
  return db.tinkerCall.findFirst({ where: { id, teamId }, select: callSelect });
}

/** The adapter and input of a request of this team, or null. */
export function requestInput(db: DbTx, teamId: string, requestId: string) {
  return db.request.findFirst({ where: { id: requestId, teamId }, select: { adapterId: true, input: true } });
}
