-- CreateTable
CREATE TABLE "SnapshotTag" (
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT NOT NULL,
    "name" TEXT NOT NULL,
    "snapshotId" TEXT NOT NULL,
    "jobId" TEXT,
    "metric" TEXT NOT NULL,
    "value" DOUBLE PRECISION NOT NULL,
    "step" INTEGER NOT NULL,
    "updatedAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "SnapshotTag_pkey" PRIMARY KEY ("adapterId","name")
);

-- CreateIndex
CREATE INDEX "SnapshotTag_snapshotId_idx" ON "SnapshotTag"("snapshotId");

-- CreateIndex
CREATE INDEX "SnapshotTag_jobId_idx" ON "SnapshotTag"("jobId");

-- AddForeignKey
ALTER TABLE "SnapshotTag" ADD CONSTRAINT "SnapshotTag_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SnapshotTag" ADD CONSTRAINT "SnapshotTag_snapshotId_fkey" FOREIGN KEY ("snapshotId") REFERENCES "Snapshot"("id") ON DELETE CASCADE ON UPDATE CASCADE;

-- AddForeignKey
ALTER TABLE "SnapshotTag" ADD CONSTRAINT "SnapshotTag_jobId_fkey" FOREIGN KEY ("jobId") REFERENCES "Job"("id") ON DELETE SET NULL ON UPDATE CASCADE;
