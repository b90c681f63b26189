import { hostname } from "node:os";
import { z } from "zod";

// The worker's whole configuration, read once from the environment.
const ZWorkerEnv = z.object({
  DATABASE_URL: z.string().min(1, "DATABASE_URL is required (npm start sets it)"),
  WORKER_HOST: z.string().min(1).default(hostname()),
  WORKER_CAPACITY: z.coerce.number().int().positive().default(4),
  WORKER_HEARTBEAT_MS: z.coerce.number().int().min(100).default(5000),
});

export type WorkerEnv = z.infer<typeof ZWorkerEnv>;

export function readWorkerEnv(source: NodeJS.ProcessEnv = process.env): WorkerEnv {
  const parsed = ZWorkerEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`worker configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}
