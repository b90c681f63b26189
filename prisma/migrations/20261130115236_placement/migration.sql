-- AlterTable
ALTER TABLE "Adapter" ADD COLUMN     "workerId" TEXT;

-- AlterTable
ALTER TABLE "Worker" ADD COLUMN     "queueWorkerIds" TEXT[] DEFAULT ARRAY[]::TEXT[];

-- CreateIndex
CREATE INDEX "Adapter_workerId_idx" ON "Adapter"("workerId");

-- AddForeignKey
ALTER TABLE "Adapter" ADD CONSTRAINT "Adapter_workerId_fkey" FOREIGN KEY ("workerId") REFERENCES "Worker"("id") ON DELETE SET NULL ON UPDATE CASCADE;
