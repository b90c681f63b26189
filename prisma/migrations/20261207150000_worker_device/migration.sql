-- The device a worker computes on (issue 45): its name ("cpu", later "cuda:N"),
-- what it is in words, and its memory, so operators and placement can see them.
ALTER TABLE "Worker" ADD COLUMN "device" TEXT NOT NULL DEFAULT 'cpu';
ALTER TABLE "Worker" ADD COLUMN "deviceDescription" TEXT NOT NULL DEFAULT '';
ALTER TABLE "Worker" ADD COLUMN "deviceMemoryMiB" INTEGER;
-- Each base model's sampler budgets on it: K/V cache and loaded policy versions.
ALTER TABLE "Worker" ADD COLUMN "kvCacheMiB" INTEGER;
ALTER TABLE "Worker" ADD COLUMN "policyPoolMiB" INTEGER;
