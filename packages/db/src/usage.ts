// What a team used, in hourly buckets: tokens trained (forward and
// forward/backward), prompt tokens prefilled and tokens sampled by sampling
// calls, and saves of weights. Counted from the team's finished requests, so
// there is no second record to drift from them. Training and adapter sampling
// are attributed to the Tinker session that created the adapter, if any.
import type { DbTx } from "./client.ts";
import { Prisma } from "./generated/prisma/client.ts";

export type UsageKind = "training" | "sampling_prefill" | "sampling_sample" | "checkpoint";

export interface UsageBucket {
  bucketStart: Date;
  kind: UsageKind;
  baseModel: string | null;
  sessionId: string | null;
  projectId: string | null;
  /** Tokens, or saves for "checkpoint". */
  count: number;
}

/** Positions of the model inputs a jsonpath finds in `input` (text tokens, and the positions images take). */
const positions = (path: string) => Prisma.sql`(
  SELECT COALESCE(sum(CASE WHEN c->>'type' = 'encoded_text' THEN jsonb_array_length(c->'tokens')
                           ELSE COALESCE((c->>'expectedTokens')::int, 0) END), 0)
  FROM jsonb_path_query(r.input, ${path}::jsonpath) c)`;

const sampled = Prisma.sql`(
  SELECT COALESCE(sum(jsonb_array_length(s->'tokens')), 0)
  FROM jsonb_path_query(r.output, '$.sequences[*]') s)`;

/** The team's usage in [from, to), by hour, then by kind, base model and session. */
export async function teamUsage(db: DbTx, teamId: string, from: Date, to: Date): Promise<UsageBucket[]> {
  const rows = await db.$queryRaw<(Omit<UsageBucket, "count"> & { count: bigint })[]>`
    WITH r AS (
      SELECT r.*, date_trunc('hour', r."createdAt") AS bucket,
        COALESCE(bm.name, r.input->'policy'->>'baseModel') AS "baseModel", tr."sessionId"
      FROM "Request" r
      LEFT JOIN "Adapter" a ON a.id = r."adapterId" AND a."teamId" = r."teamId"
      LEFT JOIN "BaseModel" bm ON bm.id = a."baseModelId"
      LEFT JOIN "TinkerRun" tr ON tr."adapterId" = r."adapterId" AND tr."teamId" = r."teamId"
      WHERE r."teamId" = ${teamId} AND r.status = 'SUCCEEDED'
        AND r."createdAt" >= ${from} AND r."createdAt" < ${to}
    ), used AS (
      SELECT bucket, "baseModel", "sessionId", 'training' AS kind, ${positions("$.data[*].modelInput.chunks[*]")} AS n
        FROM r WHERE kind IN ('FORWARD', 'FORWARD_BACKWARD')
      UNION ALL
      SELECT bucket, "baseModel", "sessionId", 'sampling_prefill', ${positions("$.prompt.chunks[*]")}
        FROM r WHERE kind = 'SAMPLE'
      UNION ALL
      SELECT bucket, "baseModel", "sessionId", 'sampling_prefill', ${positions("$.sequence.chunks[*]")}
        FROM r WHERE kind = 'COMPUTE_LOGPROBS'
      UNION ALL
      SELECT bucket, "baseModel", "sessionId", 'sampling_sample', ${sampled} FROM r WHERE kind = 'SAMPLE'
      UNION ALL
      SELECT bucket, "baseModel", "sessionId", 'checkpoint', 1
        FROM r WHERE kind IN ('SAVE_STATE', 'SAVE_WEIGHTS_FOR_SAMPLER')
    )
    SELECT u.bucket AS "bucketStart", u.kind, u."baseModel", u."sessionId", ts."projectId", sum(u.n) AS count
    FROM used u LEFT JOIN "TinkerSession" ts ON ts.id = u."sessionId" AND ts."teamId" = ${teamId}
    GROUP BY u.bucket, u.kind, u."baseModel", u."sessionId", ts."projectId"
    HAVING sum(u.n) > 0
    ORDER BY u.bucket, count DESC`;
  return rows.map((r) => ({ ...r, count: Number(r.count) }));
}

/** The metadata of these sessions of the team, by id. */
export async function sessionMetadata(db: DbTx, teamId: string, ids: readonly string[]) {
  if (ids.length === 0) return new Map<string, unknown>();
  const rows = await db.tinkerSession.findMany({
    where: { teamId, id: { in: [...ids] } },
    select: { id: true, userMetadata: true },
  });
  return new Map(rows.map((r) => [r.id, r.userMetadata]));
}
