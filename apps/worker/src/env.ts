import { availableParallelism, hostname } from "node:os";
import path from "node:path";
import { type DeviceChoice, parseDeviceChoice } from "@opentinker/kernels";
import { parseHostList } from "@opentinker/protocol";
import { z } from "zod";

// The worker's whole configuration, read once from the environment.
export const ZWorkerEnv = z.object({
  DATABASE_URL: z.string().min(1, "DATABASE_URL is required (npm start sets it)"),
  WORKER_HOST: z.string().min(1).default(hostname()),
  /**
   * How many adapters' training state this worker may hold (its slots). 4 fits
   * npm start's box: jobs take at most 3 (placement.ts keeps one for training
   * calls), and more jobs at once would only share the same few cores.
   */
  WORKER_CAPACITY: z.coerce.number().int().positive().default(4),
  /**
   * The device it computes on: auto (the best that loads; the CPU until the CUDA
   * backend is verified on a GPU), cpu, cuda:N (GPU N), or cuda-emulated (tests).
   */
  WORKER_DEVICE: z
    .string()
    .default("auto")
    .transform((value, ctx): DeviceChoice => {
      try {
        return parseDeviceChoice(value);
      } catch (error) {
        ctx.addIssue({ code: "custom", message: (error as Error).message });
        return z.NEVER;
      }
    }),
  /** Each base model's K/V cache, MiB; unset: 256, at most an eighth of free memory. */
  WORKER_KV_CACHE_MIB: z.coerce
    .number()
    .int()
    .positive()
    .max(1 << 20)
    .optional(),
  /** Each base model's loaded policy versions, MiB; unset: 1024, at most a quarter of free memory. */
  WORKER_POLICY_POOL_MIB: z.coerce
    .number()
    .int()
    .positive()
    .max(1 << 20)
    .optional(),
  /** Memory for adapters' training state, MiB: placement fits adapters within it; unset: half the free memory. */
  WORKER_ADAPTER_MEMORY_MIB: z.coerce
    .number()
    .int()
    .positive()
    .max(1 << 24)
    .optional(),
  WORKER_HEARTBEAT_MS: z.coerce.number().int().min(100).default(5000),
  /** Queue jobs run at once (sampling requests batch together up to this). */
  WORKER_CONCURRENCY: z.coerce.number().int().positive().max(256).default(16),
  /** The queue's poll for jobs it was not told about (retries); new jobs arrive by LISTEN/NOTIFY. */
  WORKER_POLL_INTERVAL_MS: z.coerce.number().int().min(50).default(2000),
  OPENTINKER_DATA_DIR: z.string().min(1).default(path.resolve(".data")),
  /** Serves the worker's readiness and liveness (GET /api/health, /api/health/live) here; unset: not served. */
  WORKER_HEALTH_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  WORKER_HEALTH_HOST: z.string().min(1).default("0.0.0.0"),
  /** Hosts (host or host:port, comma-separated) that remote environments may be on; none by default. */
  OPENTINKER_REMOTE_ENV_HOSTS: z.string().default("").transform(parseHostList),
  /**
   * Threads of the kernels' pool. A worker shares the machine with Postgres and
   * the web process, and the pool's threads spin between operations, so the
   * default leaves half the cores to the others.
   */
  WORKER_KERNEL_THREADS: z.coerce
    .number()
    .int()
    .positive()
    .default(Math.max(1, Math.floor(availableParallelism() / 2))),
});

export type WorkerEnv = z.infer<typeof ZWorkerEnv>;

export function readWorkerEnv(source: Readonly<Record<string, string | undefined>> = process.env): WorkerEnv {
  const parsed = ZWorkerEnv.safeParse(source);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`worker configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  return parsed.data;
}
