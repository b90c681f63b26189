-- CreateTable
CREATE TABLE "TinkerCall" (
    "id" TEXT NOT NULL,
    "teamId" TEXT NOT NULL,
    "adapterId" TEXT NOT NULL,
    "seqId" INTEGER NOT NULL,
    "kind" "RequestKind" NOT NULL,
    "input" JSONB,
    "requestId" TEXT,
    "errorStatus" INTEGER,
    "error" TEXT,
    "createdAt" TIMESTAMP(3) NOT NULL DEFAULT CURRENT_TIMESTAMP,

    CONSTRAINT "TinkerCall_pkey" PRIMARY KEY ("id")
);

-- CreateIndex
CREATE UNIQUE INDEX "TinkerCall_adapterId_seqId_key" ON "TinkerCall"("adapterId", "seqId");

-- AddForeignKey
ALTER TABLE "TinkerCall" ADD CONSTRAINT "TinkerCall_teamId_adapterId_fkey" FOREIGN KEY ("teamId", "adapterId") REFERENCES "Adapter"("teamId", "id") ON DELETE CASCADE ON UPDATE CASCADE;
