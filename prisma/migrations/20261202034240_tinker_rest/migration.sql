-- AlterEnum
ALTER TYPE "RequestKind" ADD VALUE 'UNLOAD';
ALTER TYPE "RequestKind" ADD VALUE 'RELEASE';

-- AlterTable
ALTER TABLE "Checkpoint" ADD COLUMN     "expiresAt" TIMESTAMP(3),
ADD COLUMN     "publishedAt" TIMESTAMP(3);

-- AlterTable
ALTER TABLE "Snapshot" ADD COLUMN     "expiresAt" TIMESTAMP(3),
ADD COLUMN     "publishedAt" TIMESTAMP(3);

-- CreateTable
CREATE TABLE "TinkerSession" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "tags" TEXT[] DEFAULT ARRAY[]::TEXT[],
    "userMetadata" JSONB,
    "sdkVersion" TEXT NOT NULL,
    "projectId" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "heartbeatAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TinkerSession_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "TinkerRun" (
    "adapterId" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "sessionId" TEXT,
    "userMetadata" JSONB,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TinkerRun_pkey" PRIMARY KEY ("adapterId")
);

-- CreateTable
CREATE TABLE "TinkerSampler" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "sessionId" TEXT,
    "baseModel" TEXT NOT NULL,
    "modelPath" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TinkerSampler_pkey" PRIMARY KEY ("id")
);

-- CreateTable
CREATE TABLE "AuditEvent" (
    "id" BIGSERIAL NOT NULL,
    "teamId" TEXT NOT NULL,
    "at" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,
    "event" TEXT NOT NULL,
    "modelId" TEXT,
    "tinkerPath" TEXT,
    "purpose" TEXT,

    CONSTRAINT "AuditEvent_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE INDEX "TinkerSession_teamId_createdAt_idx" ON "TinkerSession"("teamId", "createdAt");

-- CreateIndex
CREATE UNIQUE INDEX "TinkerSession_teamId_id_key" ON "TinkerSession"("teamId", "id");

-- CreateIndex
CREATE INDEX "TinkerRun_teamId_sessionId_idx" ON "TinkerRun"("teamId", "sessionId");

-- CreateIndex
CREATE UNIQUE INDEX "TinkerRun_teamId_adapterId_key" ON "TinkerRun"("teamId", "adapterId");

-- CreateIndex
CREATE INDEX "TinkerSampler_teamId_sessionId_idx" ON "TinkerSampler"("teamId", "sessionId");

-- CreateIndex
CREATE UNIQUE INDEX "TinkerSampler_teamId_id_key" ON "TinkerSampler"("teamId", "id");

-- CreateIndex
CREATE INDEX "AuditEvent_teamId_at_idx" ON "AuditEvent"("teamId", "at");

-- AddForeignKey
ALTER TABLE "TinkerSession" ADD CONSTRAINT "TinkerSession_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TinkerRun" ADD CONSTRAINT "TinkerRun_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TinkerRun" ADD CONSTRAINT "TinkerRun_teamId_sessionId_fkey" FOREIGN KEY ("teamId", "sessionId") REFERENCES "TinkerSession"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TinkerSampler" ADD CONSTRAINT "TinkerSampler_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "TinkerSampler" ADD CONSTRAINT "TinkerSampler_teamId_sessionId_fkey" FOREIGN KEY ("teamId", "sessionId") REFERENCES "TinkerSession"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "AuditEvent" ADD CONSTRAINT "AuditEvent_teamId_fkey" FOREIGN KEY ("teamId") REFERENCES "Team"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- Hand-written: workers look for expired saved weights every few seconds; only
-- the few with a TTL are indexed.
CREATE INDEX "Checkpoint_expiresAt_idx" ON "Checkpoint"("expiresAt") WHERE "expiresAt" IS NOT NULL;
CREATE INDEX "Snapshot_expiresAt_idx" ON "Snapshot"("expiresAt") WHERE "expiresAt" IS NOT NULL;
