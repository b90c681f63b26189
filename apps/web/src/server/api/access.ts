// Revoked access, heard by every web process: the database announces each
// revoked or deleted API key and each ended session (triggers on ApiKey and
// Session, fired by revoke, sign-out, a removed membership or a deleted team).
// Cached keys are forgotten at once, and subscribers (the realtime relay) drop
// the connections that acted for them.
import type { Caller } from "@opentinker/api";
import { ACCESS_CHANNEL, PgListener } from "@opentinker/db";
import { z } from "zod";
import { forgetAuthenticatedKeys } from "./context.ts";

const ZRevocation = z.union([
  z.object({ apiKeyId: z.string().min(1) }),
  z.object({ sessionId: z.string().min(1) }),
]);
export type Revocation = z.infer<typeof ZRevocation>;

/** Whether a revocation ends this caller's access. */
export function revokes(revocation: Revocation, caller: Caller): boolean {
  return "apiKeyId" in revocation
    ? caller.apiKeyId === revocation.apiKeyId
    : caller.sessionId === revocation.sessionId;
}

export class AccessWatch {
  private readonly listener: PgListener;
  private readonly subscribers = new Set<(revocation: Revocation) => void>();

  constructor(url: string) {
    // A lost connection may have missed a revocation: forget every cached key.
    this.listener = new PgListener(url, forgetAuthenticatedKeys);
  }

  /** Resolves once the LISTEN is in place. */
  async start(): Promise<void> {
    await this.listener.subscribe(ACCESS_CHANNEL, (payload) => {
      let revocation: Revocation | undefined;
      try {
        revocation = ZRevocation.safeParse(JSON.parse(payload)).data;
      } catch {
        return;
      }
      if (!revocation) return;
      forgetAuthenticatedKeys();
      for (const notify of this.subscribers) notify(revocation);
    });
  }

  onRevoked(notify: (revocation: Revocation) => void): () => void {
    this.subscribers.add(notify);
    return () => this.subscribers.delete(notify);
  }

  close(): Promise<void> {
    return this.listener.close();
  }
}
