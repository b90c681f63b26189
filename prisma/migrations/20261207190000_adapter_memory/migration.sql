-- Placement by memory (issue 45): a base model's trainable sizes (parameters per
-- LoRA rank for attention, MLP and unembedding, and its whole parameter count),
-- what each adapter's training state takes on a worker (weights, gradient and
-- two AdamW moments, f32), and the memory a worker gives adapters' training
-- state. Null where unknown (rows from before, undescribed models): no limit.
ALTER TABLE "BaseModel" ADD COLUMN "attnParamsPerRank" INTEGER;
ALTER TABLE "BaseModel" ADD COLUMN "mlpParamsPerRank" INTEGER;
ALTER TABLE "BaseModel" ADD COLUMN "unembedParamsPerRank" INTEGER;
ALTER TABLE "BaseModel" ADD COLUMN "parameters" DOUBLE PRECISION;
ALTER TABLE "Adapter" ADD COLUMN "stateBytes" DOUBLE PRECISION;
ALTER TABLE "Worker" ADD COLUMN "adapterMemoryMiB" INTEGER;
