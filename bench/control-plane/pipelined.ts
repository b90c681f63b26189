// Pipelined training calls: a loop that queues an adapter's calls back to back
// (as the SDK does with forwardBackward then optimStep) against the same calls
// made one at a time, each waited for. An adapter's calls share a named queue,
// so pipelining is only as fast as the queue hands each call over.
import { BASE, type BenchControlPlane } from "./control-plane.ts";
import { progress, round } from "./stats.ts";

const DATUM = {
  modelInput: { chunks: [{ type: "encoded_text", tokens: [10, 11, 12, 13, 14, 15, 16, 17] }] },
  lossFnInputs: {
    targetTokens: { dtype: "int64", data: [11, 12, 13, 14, 15, 16, 17, 18] },
    weights: { dtype: "float32", data: [1, 1, 1, 1, 1, 1, 1, 1] },
  },
};

export interface PipelinedResult {
  calls: number;
  /** Each call sent and waited for before the next: ms per call. */
  sequentialMsPerCall: number;
  /** Every call sent first, then each waited for: ms per call. */
  pipelinedMsPerCall: number;
  /** sequential / pipelined: above 1 when pipelining helps, as it should. */
  speedup: number;
}

export async function benchPipelined(cp: BenchControlPlane, calls: number): Promise<PipelinedResult> {
  const { id: adapterId } = await cp.post<{ id: string }>("/v1/adapters", {
    name: "bench-pipelined",
    baseModel: BASE,
    rank: 8,
  });
  const body = { adapterId, data: [DATUM], lossFn: "cross_entropy" };
  await cp.call("/v1/training/forward-backward", body); // places the adapter and warms up
  progress(`pipelined: ${calls} forwardBackward calls one at a time`);
  let started = performance.now();
  for (let i = 0; i < calls; i++) await cp.call("/v1/training/forward-backward", body);
  const sequential = (performance.now() - started) / calls;
  progress(`pipelined: ${calls} forwardBackward calls queued back to back`);
  started = performance.now();
  const futures: string[] = [];
  for (let i = 0; i < calls; i++)
    futures.push((await cp.post<{ requestId: string }>("/v1/training/forward-backward", body)).requestId);
  for (const id of futures) await cp.post(`/v1/futures/${id}/wait`, { timeoutMs: 30_000 });
  const pipelined = (performance.now() - started) / calls;
  return {
    calls,
    sequentialMsPerCall: round(sequential),
    pipelinedMsPerCall: round(pipelined),
    speedup: round(sequential / pipelined),
  };
}
