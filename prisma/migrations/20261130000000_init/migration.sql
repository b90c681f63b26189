-- CreateSchema
CREATE SCHEMA IF NOT EXISTS "public";

-- CreateEnum
CREATE TYPE "Role" AS ENUM ('OWNER', 'MEMBER');

-- CreateEnum
CREATE TYPE "AdapterKind" AS ENUM ('LORA', 'FULL');

-- CreateEnum
CREATE TYPE "AdapterStatus" AS ENUM ('ACTIVE', 'ARCHIVED');

-- CreateEnum
CREATE TYPE "EnvironmentKind" AS ENUM ('BUILTIN', 'REMOTE');

-- CreateEnum
CREATE TYPE "JobKind" AS ENUM ('SFT', 'RL', 'EVAL');

-- CreateEnum
CREATE TYPE "JobStatus" AS ENUM ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED');

-- CreateEnum
CREATE TYPE "TrajectoryStatus" AS ENUM ('OK', 'FAILED');

-- CreateEnum
CREATE TYPE "WorkerStatus" AS ENUM ('ONLINE', 'DRAINING', 'OFFLINE');

-- CreateEnum
CREATE TYPE "RequestKind" AS ENUM ('CREATE_ADAPTER', 'FORWARD', 'FORWARD_BACKWARD', 'OPTIM_STEP', 'SAVE_WEIGHTS_FOR_SAMPLER', 'SAVE_STATE', 'LOAD_STATE', 'SAMPLE', 'COMPUTE_LOGPROBS');

-- CreateEnum
CREATE TYPE "RequestStatus" AS ENUM ('QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED');

-- CreateTable
CREATE TABLE "Team" (
    "id" TEXT NOT NULL,
    "slug" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "maxAdapters" INTEGER NOT NULL DEFAULT 100,
    "maxConcurrentJobs" INTEGER NOT NULL DEFAULT 4,
    "maxQueuedRequests" INTEGER NOT NULL DEFAULT 1000,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Team_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "User" (
    "id" TEXT NOT NULL,
    "email" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "passwordHash" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "User_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Membership" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "userId" TEXT NOT NULL,
    "role" "Role" NOT NULL DEFAULT 'MEMBER',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Membership_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "ApiKey" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "createdById" TEXT,
    "name" TEXT NOT NULL,
    "prefix" TEXT NOT NULL,
    "keyHash" TEXT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "lastUsedAt" TIMESTAMP(3),
    "revokedAt" TIMESTAMP(3),

    CONSTRAINT "ApiKey_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "BaseModel" (
    "id" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "architecture" TEXT NOT NULL,
    "vocabSize" INTEGER NOT NULL,
    "contextLength" INTEGER NOT NULL,
    "visionLanguage" BOOLEAN NOT NULL DEFAULT false,
    "checksum" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "BaseModel_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Adapter" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "baseModelId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "AdapterKind" NOT NULL,
    "rank" INTEGER,
    "alpha" DOUBLE PRECISION,
    "trainAttn" BOOLEAN NOT NULL DEFAULT true,
    "trainMlp" BOOLEAN NOT NULL DEFAULT true,
    "trainUnembed" BOOLEAN NOT NULL DEFAULT false,
    "seed" INTEGER NOT NULL DEFAULT 0,
    "status" "AdapterStatus" NOT NULL DEFAULT 'ACTIVE',
    "step" INTEGER NOT NULL DEFAULT 0,
    "requestSeq" INTEGER NOT NULL DEFAULT 0,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "updatedAt" TIMESTAMP(3) NOT NULL,

    CONSTRAINT "Adapter_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Checkpoint" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT NOT NULL,
    "jobId" TEXT,
    "name" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "path" TEXT NOT NULL,
    "checksum" TEXT NOT NULL,
    "sizeBytes" BIGINT NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Checkpoint_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Snapshot" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT NOT NULL,
    "jobId" TEXT,
    "version" INTEGER NOT NULL,
    "handle" TEXT NOT NULL,
    "path" TEXT NOT NULL,
    "checksum" TEXT NOT NULL,
    "trainerStep" INTEGER NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Snapshot_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "SnapshotRegistry" (
    "adapterId" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "snapshotId" TEXT,
    "version" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SnapshotRegistry_pkey" PRIMARY KEY ("adapterId")
);

-- CreateTable
CREATE TABLE "Environment" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "kind" "EnvironmentKind" NOT NULL,
    "builtin" TEXT,
    "url" TEXT,
    "config" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Environment_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Job" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT NOT NULL,
    "environmentId" TEXT,
    "kind" "JobKind" NOT NULL,
    "config" JSONB NOT NULL,
    "status" "JobStatus" NOT NULL DEFAULT 'QUEUED',
    "step" INTEGER NOT NULL DEFAULT 0,
    "error" TEXT,
    "workerId" TEXT,
    "cancelRequestedAt" TIMESTAMP(3),
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Job_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Trajectory" (
    "id" BIGSERIAL NOT NULL,
    "teamId" TEXT NOT NULL,
    "jobId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "groupIndex" INTEGER NOT NULL,
    "sampleIndex" INTEGER NOT NULL,
    "player" INTEGER NOT NULL DEFAULT 0,
    "snapshotVersion" INTEGER NOT NULL,
    "staleness" INTEGER NOT NULL DEFAULT 0,
    "status" "TrajectoryStatus" NOT NULL DEFAULT 'OK',
    "failureReason" TEXT,
    "reward" DOUBLE PRECISION NOT NULL,
    "tokenCount" INTEGER NOT NULL,
    "tokens" BYTEA NOT NULL,
    "mask" BYTEA NOT NULL,
    "logprobs" BYTEA NOT NULL,
    "advantages" BYTEA NOT NULL,
    "metrics" JSONB NOT NULL DEFAULT '{}',
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Trajectory_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Metric" (
    "id" BIGSERIAL NOT NULL,
    "teamId" TEXT NOT NULL,
    "jobId" TEXT NOT NULL,
    "step" INTEGER NOT NULL,
    "name" TEXT NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Metric_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Worker" (
    "id" TEXT NOT NULL,
    "host" TEXT NOT NULL,
    "pid" INTEGER NOT NULL,
    "capacity" INTEGER NOT NULL,
    "loadedModels" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "status" "WorkerStatus" NOT NULL DEFAULT 'ONLINE',
    "startedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeatAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "Worker_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "Request" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT,
    "seq" INTEGER,
    "kind" "RequestKind" NOT NULL,
    "status" "RequestStatus" NOT NULL DEFAULT 'QUEUED',
    "input" JSONB NOT NULL,
    "output" JSONB,
    "error" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "startedAt" TIMESTAMP(3),
    "finishedAt" TIMESTAMP(3),

    CONSTRAINT "Request_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "Team_slug_key" ON "Team"("slug");

-- CreateIndex
CREATE UNIQUE INDEX "User_email_key" ON "User"("email");

-- CreateIndex
CREATE INDEX "Membership_userId_idx" ON "Membership"("userId");

-- CreateIndex
CREATE UNIQUE INDEX "Membership_teamId_userId_key" ON "Membership"("teamId", "userId");

-- CreateIndex
CREATE UNIQUE INDEX "ApiKey_keyHash_key" ON "ApiKey"("keyHash");

-- CreateIndex
CREATE INDEX "ApiKey_teamId_idx" ON "ApiKey"("teamId");

-- CreateIndex
CREATE UNIQUE INDEX "BaseModel_name_key" ON "BaseModel"("name");

-- CreateIndex
CREATE UNIQUE INDEX "Adapter_teamId_name_key" ON "Adapter"("teamId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Adapter_teamId_id_key" ON "Adapter"("teamId", "id");

-- CreateIndex
CREATE INDEX "Checkpoint_adapterId_step_idx" ON "Checkpoint"("adapterId", "step");

-- CreateIndex
CREATE UNIQUE INDEX "Checkpoint_adapterId_name_key" ON "Checkpoint"("adapterId", "name");

-- CreateIndex
CREATE UNIQUE INDEX "Snapshot_handle_key" ON "Snapshot"("handle");

-- CreateIndex
CREATE UNIQUE INDEX "Snapshot_adapterId_version_key" ON "Snapshot"("adapterId", "version");

-- CreateIndex
CREATE UNIQUE INDEX "SnapshotRegistry_snapshotId_key" ON "SnapshotRegistry"("snapshotId");

-- CreateIndex
CREATE UNIQUE INDEX "SnapshotRegistry_teamId_adapterId_key" ON "SnapshotRegistry"("teamId", "adapterId");

-- CreateIndex
CREATE UNIQUE INDEX "Environment_teamId_name_key" ON "Environment"("teamId", "name");

-- CreateIndex
CREATE INDEX "Job_teamId_status_idx" ON "Job"("teamId", "status");

-- CreateIndex
CREATE INDEX "Job_adapterId_idx" ON "Job"("adapterId");

-- CreateIndex
CREATE UNIQUE INDEX "Job_teamId_id_key" ON "Job"("teamId", "id");

-- CreateIndex
CREATE UNIQUE INDEX "Trajectory_jobId_step_groupIndex_sampleIndex_player_key" ON "Trajectory"("jobId", "step", "groupIndex", "sampleIndex", "player");

-- CreateIndex
CREATE INDEX "Metric_jobId_name_step_idx" ON "Metric"("jobId", "name", "step");

-- CreateIndex
CREATE INDEX "Worker_status_heartbeatAt_idx" ON "Worker"("status", "heartbeatAt");

-- CreateIndex
CREATE INDEX "Request_teamId_status_idx" ON "Request"("teamId", "status");

-- CreateIndex
CREATE UNIQUE INDEX "Request_adapterId_seq_key" ON "Request"("adapterId", "seq");

-- AddForeignKey
ALTER TABLE "Membership" ADD CONSTRAINT "Membership_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Membership" ADD CONSTRAINT "Membership_userId_fkey" FOREIGN KEY ("userId") REFERENCES "User"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "ApiKey" ADD CONSTRAINT "ApiKey_createdById_fkey" FOREIGN KEY ("createdById") REFERENCES "User"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Adapter" ADD CONSTRAINT "Adapter_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Adapter" ADD CONSTRAINT "Adapter_baseModelId_fkey" FOREIGN KEY ("baseModelId") REFERENCES "BaseModel"("id") ON DELETE RESTRICT ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Checkpoint" ADD CONSTRAINT "Checkpoint_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Checkpoint" ADD CONSTRAINT "Checkpoint_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Checkpoint" ADD CONSTRAINT "Checkpoint_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Snapshot" ADD CONSTRAINT "Snapshot_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Snapshot" ADD CONSTRAINT "Snapshot_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Snapshot" ADD CONSTRAINT "Snapshot_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SnapshotRegistry" ADD CONSTRAINT "SnapshotRegistry_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SnapshotRegistry" ADD CONSTRAINT "SnapshotRegistry_snapshotId_fkey" FOREIGN KEY ("snapshotId") REFERENCES "Snapshot"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Environment" ADD CONSTRAINT "Environment_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_environmentId_fkey" FOREIGN KEY ("environmentId") REFERENCES "Environment"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Job" ADD CONSTRAINT "Job_workerId_fkey" FOREIGN KEY ("workerId") REFERENCES "Worker"("id") ON DELETE SET NULL ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Trajectory" ADD CONSTRAINT "Trajectory_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Trajectory" ADD CONSTRAINT "Trajectory_teamId_jobId_fkey" FOREIGN KEY ("teamId", "jobId") REFERENCES "Job"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Metric" ADD CONSTRAINT "Metric_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Metric" ADD CONSTRAINT "Metric_teamId_jobId_fkey" FOREIGN KEY ("teamId", "jobId") REFERENCES "Job"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Request" ADD CONSTRAINT "Request_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "Request" ADD CONSTRAINT "Request_adapterId_fkey" FOREIGN KEY ("adapterId") REFERENCES "Adapter"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- ───────────────────────────────────────────────────────────────────────────
-- Hand-written: rules Prisma's schema language cannot express.
-- ───────────────────────────────────────────────────────────────────────────

-- An environment is either built-in (a kind, no URL) or remote (a URL, no kind).
ALTER TABLE "Environment" ADD CONSTRAINT "Environment_kind_fields_check" CHECK (
    ("kind" = 'BUILTIN' AND "builtin" IS NOT NULL AND "url" IS NULL)
 OR ("kind" = 'REMOTE' AND "url" IS NOT NULL AND "builtin" IS NULL)
);

ALTER TABLE "Snapshot" ADD CONSTRAINT "Snapshot_version_positive_check" CHECK ("version" >= 1);
ALTER TABLE "Trajectory" ADD CONSTRAINT "Trajectory_arrays_length_check" CHECK (
    octet_length("tokens") = 4 * "tokenCount"
AND octet_length("mask") = "tokenCount"
AND octet_length("logprobs") = 4 * "tokenCount"
AND octet_length("advantages") = 4 * "tokenCount"
);

-- Snapshots are immutable (C2). The only change allowed is the provenance link to
-- a job being cleared when that job is deleted (its foreign key is ON DELETE SET
-- NULL); every other UPDATE is rejected.
CREATE FUNCTION opentinker_snapshot_immutable() RETURNS trigger AS $$
BEGIN
    IF NEW."jobId" IS NULL
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

CREATE TRIGGER "Snapshot_immutable"
    BEFORE UPDATE ON "Snapshot"
    FOR EACH ROW EXECUTE FUNCTION opentinker_snapshot_immutable();

-- Versions are allocated by the registry: a new snapshot must be exactly one past
-- the adapter's latest published version, so numbers stay contiguous and are never
-- reused, even after old snapshots are deleted. The row lock serialises publishers.
CREATE FUNCTION opentinker_snapshot_next_version() RETURNS trigger AS $$
DECLARE
    latest integer;
BEGIN
    SELECT "version" INTO latest FROM "SnapshotRegistry"
        WHERE "adapterId" = NEW."adapterId" FOR UPDATE;
    IF NEW."version" <> COALESCE(latest, 0) + 1 THEN
        RAISE EXCEPTION 'snapshot version % for adapter % is not the next version (latest is %)',
            NEW."version", NEW."adapterId", COALESCE(latest, 0)
            USING ERRCODE = 'OT002';
    END IF;
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER "Snapshot_next_version"
    BEFORE INSERT ON "Snapshot"
    FOR EACH ROW EXECUTE FUNCTION opentinker_snapshot_next_version();

-- C3: the registry pointer follows every insert in the same transaction.
CREATE FUNCTION opentinker_snapshot_publish() RETURNS trigger AS $$
BEGIN
    INSERT INTO "SnapshotRegistry" ("adapterId", "teamId", "snapshotId", "version", "updatedAt")
        VALUES (NEW."adapterId", NEW."teamId", NEW."id", NEW."version", now())
    ON CONFLICT ("adapterId") DO UPDATE
        SET "snapshotId" = EXCLUDED."snapshotId",
            "version" = EXCLUDED."version",
            "updatedAt" = EXCLUDED."updatedAt";
    RETURN NEW;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER "Snapshot_publish"
    AFTER INSERT ON "Snapshot"
    FOR EACH ROW EXECUTE FUNCTION opentinker_snapshot_publish();
