-- CreateEnum
CREATE TYPE "JobErrorClass" AS ENUM ('USER', 'INTERNAL');

-- AlterTable
ALTER TABLE "Job" ADD COLUMN     "errorClass" "JobErrorClass",
ADD COLUMN     "faults" INTEGER NOT NULL DEFAULT 0,
ADD COLUMN     "lastFault" TEXT,
ADD COLUMN     "waitingFor" TEXT;
