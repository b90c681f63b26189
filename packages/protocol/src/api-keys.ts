// API keys over the API: a team's programs authenticate with them.
import { z } from "zod";
import { idRequest } from "./resources.ts";

export const ZCreateApiKeyRequest = z.object({ name: z.string().min(1).max(128) });

/** The plaintext key is in this answer only; the database keeps a hash. */
export const ZCreatedApiKey = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  key: z.string(),
});

export const ZApiKey = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});
export type ApiKeyInfo = z.infer<typeof ZApiKey>;

export const ZApiKeyIdRequest = idRequest("keyId");
export const ZRevoked = z.object({ revoked: z.literal(true) });

/**
 * The Tinker SDK refuses keys that do not start with `tml-`; a Tinker client
 * presents one of our keys with this prefix in front. It is the same key (same
 * team, revoked with it), so nothing is issued twice.
 */
export const TINKER_KEY_PREFIX = "tml-";

export const tinkerApiKey = (key: string): string => TINKER_KEY_PREFIX + key;

/** Our key inside a Tinker-form key, or null when it is not in that form. */
export const fromTinkerApiKey = (key: string): string | null =>
  key.startsWith(TINKER_KEY_PREFIX) ? key.slice(TINKER_KEY_PREFIX.length) : null;
