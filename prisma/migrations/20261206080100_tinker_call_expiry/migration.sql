-- A call refused when it came (a bad input) keeps its seq_id: its refusal is
-- recorded when its turn comes, so the calls after it go on.
ALTER TABLE "TinkerCall" ADD COLUMN "pendingErrorStatus" INTEGER,
ADD COLUMN "pendingError" TEXT;

-- A Tinker call becomes a Request exactly once (issue 44). Its Request takes the
-- call's own id ('tinker-call-<model>-<seq_id>', packages/db/src/tinker-calls.ts),
-- and inserting that Request claims the call in the same statement: a call already
-- queued, refused, expired or withdrawn (its refusal answered, its row deleted)
-- refuses the insert with OT412, and the whole statement fails (no Request, no
-- queue job, no seq bump). So a resent call never runs twice, a call answered with
-- an error never runs, and the web processes that release calls in seq_id order
-- need no lock: a call is released only once its predecessor's claim committed.
CREATE FUNCTION opentinker_claim_tinker_call() RETURNS trigger AS $$
BEGIN
    IF NEW."id" NOT LIKE 'tinker-call-%' THEN
        RETURN NEW;
    END IF;
    UPDATE "TinkerCall" SET "requestId" = NEW."id", "input" = NULL
        WHERE "id" = NEW."id" AND "teamId" = NEW."teamId"
          AND "requestId" IS NULL AND "errorStatus" IS NULL AND "pendingErrorStatus" IS NULL;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'tinker call % is already queued, refused, expired or withdrawn', NEW."id"
            USING ERRCODE = 'OT412';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

-- Named to run before "Request_quota": a claim refused costs no quota lock.
CREATE TRIGGER "Request_claim_tinker_call"
    BEFORE INSERT ON "Request"
    FOR EACH ROW EXECUTE FUNCTION opentinker_claim_tinker_call();

-- Calls held when this runs were recorded under ids no Request can claim: they
-- are refused, and were not run (the SDK raises the error).
UPDATE "TinkerCall" SET "errorStatus" = 503, "input" = NULL,
    "error" = 'the service was upgraded while this call waited for an earlier seq_id; it was not run'
    WHERE "requestId" IS NULL AND "errorStatus" IS NULL;
