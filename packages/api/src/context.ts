// What every procedure runs with. The inner part has no request or response:
// the web process builds it from an authenticated request, a test builds it
// directly and calls procedures through createCaller on the real database.
import type { Db, RequestWaiter } from "@opentinker/db";
import type { ObjectStore } from "@opentinker/store";

/** Who is calling: resolved by the web process (API key or dashboard session). */
export interface Caller {
  teamId: string;
  teamSlug: string;
  /** The API key used, or null for a dashboard session. */
  apiKeyId: string | null;
  /** The dashboard session used, or null for an API key. */
  sessionId: string | null;
}

export interface Context {
  db: Db;
  waiter: RequestWaiter;
  caller: Caller | null;
  /** Hosts remote environments may be on (the operator's OPENTINKER_REMOTE_ENV_HOSTS). */
  remoteEnvHosts: readonly string[];
  /** Called when this process revokes a key, so that cached authentications end at once. */
  keyRevoked: () => void;
  /** Where snapshots' files are (downloads read them); null where the caller serves none. */
  store: ObjectStore | null;
}

export interface InnerContextOptions {
  db: Db;
  waiter: RequestWaiter;
  caller: Caller | null;
  remoteEnvHosts?: readonly string[] | undefined;
  keyRevoked?: (() => void) | undefined;
  store?: ObjectStore | undefined;
}

/** The context without request or response; an empty allow-list admits no remote host. */
export function createInnerContext(options: InnerContextOptions): Context {
  return {
    db: options.db,
    waiter: options.waiter,
    caller: options.caller,
    remoteEnvHosts: options.remoteEnvHosts ?? [],
    keyRevoked: options.keyRevoked ?? (() => {}),
    store: options.store ?? null,
  };
}
