-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "name" TEXT;

-- Hand-written: existing jobs get the name new ones default to
-- (packages/protocol's defaultJobName: "<environment> · <adapter>", or
-- "<kind> · <adapter>" for a job without an environment), then the column is required.
UPDATE "Job" AS j
SET "name" = COALESCE(e."name", lower(j."kind"::text)) || ' · ' || a."name"
FROM "Adapter" AS a, "Job" AS k
LEFT JOIN "Environment" AS e ON e."id" = k."environmentId"
WHERE k."id" = j."id" AND a."id" = j."adapterId";

ALTER TABLE "Job" ALTER COLUMN "name" SET NOT NULL;
