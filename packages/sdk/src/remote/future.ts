import { type ApiFuture, type FutureRef, type FutureState, ZFutureState } from "@opentinker/protocol";
import type { z } from "zod";
import type { Api } from "./api.ts";

export class RequestFailedError extends Error {
  override name = "RequestFailedError";
}

/** How long one wait call may block on the server before the client asks again. */
const WAIT_MS = 30_000;

/**
 * A server-side future: the call is accepted and ordered; result() waits for it
 * (the server wakes the wait as soon as a worker writes the result).
 */
export class RemoteFuture<T> implements ApiFuture<T> {
  private settled: Promise<T> | null = null;

  constructor(
    private readonly api: Api,
    readonly ref: FutureRef,
    private readonly output: z.ZodType<T>,
  ) {}

  get requestId(): string {
    return this.ref.requestId;
  }

  result(): Promise<T> {
    this.settled ??= this.wait();
    return this.settled;
  }

  private async wait(): Promise<T> {
    for (;;) {
      const state = ZFutureState.parse(
        await this.api.request<FutureState>("POST", `/v1/futures/${this.ref.requestId}/wait`, {
          timeoutMs: WAIT_MS,
        }),
      );
      if (state.status === "SUCCEEDED") return this.output.parse(state.output);
      if (state.status === "FAILED" || state.status === "CANCELLED")
        throw new RequestFailedError(
          `request ${this.ref.requestId} (${state.kind}) ${state.status.toLowerCase()}: ${state.error}`,
        );
    }
  }
}
