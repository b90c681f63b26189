-- AlterTable
ALTER TABLE "Team" ADD COLUMN     "maxJobSteps" INTEGER NOT NULL DEFAULT 10000,
ADD COLUMN     "maxSequencesPerStep" INTEGER NOT NULL DEFAULT 512;

-- AlterTable
ALTER TABLE "BaseModel" ADD COLUMN     "imageTokens" INTEGER;

-- AlterTable
ALTER TABLE "Snapshot" ADD COLUMN     "supersededAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "Session" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "expiresAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Session_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "Session_userId_idx" ON "Session"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "Environment_teamId_id_key" ON "Environment"("teamId", "id");

-- AddForeignKey
ALTER TABLE "Session" ADD CONSTRAINT "Session_teamId_userId_fkey" FOREIGN KEY ("teamId", "userId") REFERENCES "Membership"("teamId", "userId") ON DELETE CASCADE ON UPDATE CASCADE;

-- ───────────────────────────────────────────────────────────────────────────
-- Hand-written: rules Prisma's schema language cannot express.
-- ───────────────────────────────────────────────────────────────────────────

-- Team-owned rows reference the same team's objects: a job's environment and a
-- request's adapter (the other references already are composite).
ALTER TABLE "Job" ADD CONSTRAINT "Job_teamId_environmentId_fkey"
    FOREIGN KEY ("teamId", "environmentId") REFERENCES "Environment"("teamId", "id")
    ON DELETE SET NULL ("environmentId") ON UPDATE CASCADE;
ALTER TABLE "Request" ADD CONSTRAINT "Request_teamId_adapterId_fkey"
    FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id")
    ON DELETE CASCADE ON UPDATE CASCADE;

-- Snapshots stay immutable (C2). Two changes are allowed: the provenance link to a
-- job is cleared when that job is deleted, and a snapshot is marked superseded
-- once (its training state was lost and the job resumed from an earlier one).
CREATE OR REPLACE FUNCTION opentinker_snapshot_immutable() RETURNS trigger AS $$
BEGIN
    IF (NEW."jobId" IS NULL OR NEW."jobId" IS NOT DISTINCT FROM OLD."jobId")
       AND (OLD."supersededAt" IS NULL OR NEW."supersededAt" IS NOT DISTINCT FROM OLD."supersededAt")
       AND (NEW."id", NEW."teamId", NEW."adapterId", NEW."version", NEW."handle",
            NEW."path", NEW."checksum", NEW."trainerStep", NEW."createdAt")
           IS NOT DISTINCT FROM
           (OLD."id", OLD."teamId", OLD."adapterId", OLD."version", OLD."handle",
            OLD."path", OLD."checksum", OLD."trainerStep", OLD."createdAt")
    THEN
        RETURN NEW;
    END IF;
    RAISE EXCEPTION 'snapshot % (adapter %, version %) is immutable', OLD."id", OLD."adapterId", OLD."version"
        USING ERRCODE = 'OT001';
END;
$$ LANGUAGE plpgsql;

-- The queued-request quota, enforced where requests are written, exactly under
-- any concurrency. A refused insert fails its whole statement: no Request row, no
-- queue job, no seq bump. A deleted team's insert (its key was still cached
-- somewhere) is refused as such.
--
-- Far below the quota an insert takes a team lock in SHARED mode, so such
-- inserts never wait for each other: fewer of them can be in flight than there
-- are connections, so while `active + max_connections < quota` none of them can
-- take the team over it. Nearer the quota an insert takes the lock EXCLUSIVE,
-- which waits until every insert in flight has committed, and counts again (a
-- volatile function's queries see what committed before the lock was granted).
-- An insert that finds, once it holds the shared lock, that the team has come
-- near its quota meanwhile fails with OT409 and its statement is run again
-- (packages/db/src/requests.ts): it never upgrades its lock, so two inserts can
-- never deadlock. Each request is inserted in a transaction of its own, which
-- is what bounds the inserts in flight.
CREATE FUNCTION opentinker_request_quota() RETURNS trigger AS $$
DECLARE
    quota integer;
    active bigint;
    room integer := current_setting('max_connections')::integer;
    lock_key integer := hashtext('requests:' || NEW."teamId");
BEGIN
    SELECT "maxQueuedRequests" INTO quota FROM "Team" WHERE "id" = NEW."teamId";
    IF quota IS NULL THEN
        RAISE EXCEPTION 'team % does not exist', NEW."teamId" USING ERRCODE = 'OT401';
    END IF;
    SELECT count(*) INTO active FROM "Request"
        WHERE "teamId" = NEW."teamId" AND "status" IN ('QUEUED', 'RUNNING');
    IF active + room < quota THEN
        PERFORM pg_advisory_xact_lock_shared(lock_key);
        SELECT count(*) INTO active FROM "Request"
            WHERE "teamId" = NEW."teamId" AND "status" IN ('QUEUED', 'RUNNING');
        IF active + room < quota THEN
            RETURN NEW;
        END IF;
        RAISE EXCEPTION 'the team came near its request quota meanwhile: run the statement again'
            USING ERRCODE = 'OT409';
    END IF;
    PERFORM pg_advisory_xact_lock(lock_key);
    SELECT count(*) INTO active FROM "Request"
        WHERE "teamId" = NEW."teamId" AND "status" IN ('QUEUED', 'RUNNING');
    IF active >= quota THEN
        RAISE EXCEPTION 'quota exceeded: the team has % queued requests (maxQueuedRequests is %)', active, quota
            USING ERRCODE = 'OT429';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER "Request_quota"
    BEFORE INSERT ON "Request"
    FOR EACH ROW EXECUTE FUNCTION opentinker_request_quota();

-- Revoked access is announced on opentinker_access, so every web process drops
-- cached keys and open sockets at once: a key revoked or deleted (with its team,
-- too), a session signed out or ended with its membership.
CREATE FUNCTION opentinker_api_key_revoked() RETURNS trigger AS $$
BEGIN
    IF TG_OP = 'DELETE' OR (OLD."revokedAt" IS NULL AND NEW."revokedAt" IS NOT NULL) THEN
        PERFORM pg_notify('opentinker_access', json_build_object('apiKeyId', OLD."id")::text);
    END IF;
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER "ApiKey_revoked"
    AFTER UPDATE OR DELETE ON "ApiKey"
    FOR EACH ROW EXECUTE FUNCTION opentinker_api_key_revoked();

CREATE FUNCTION opentinker_session_ended() RETURNS trigger AS $$
BEGIN
    PERFORM pg_notify('opentinker_access', json_build_object('sessionId', OLD."id")::text);
    RETURN NULL;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER "Session_ended"
    AFTER DELETE ON "Session"
    FOR EACH ROW EXECUTE FUNCTION opentinker_session_ended();
