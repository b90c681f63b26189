// API keys of the team: created (the plaintext once), listed, revoked.
import { createApiKey, listApiKeys, revokeApiKey } from "@opentinker/db";
import {
  ZApiKey,
  ZApiKeyIdRequest,
  ZCreateApiKeyRequest,
  ZCreatedApiKey,
  ZNoInput,
  ZRevoked,
} from "@opentinker/protocol";
import { z } from "zod";
import { iso, isoOrNull } from "../present.ts";
import { notFound, router, teamRoute } from "../trpc.ts";

export const apiKeysRouter = router({
  create: teamRoute("POST", "/v1/api-keys", "api-keys")
    .input(ZCreateApiKeyRequest)
    .output(ZCreatedApiKey)
    // The plaintext key is in this response only; the database keeps a hash.
    .mutation(({ ctx, input }) => createApiKey(ctx.db, ctx.caller.teamId, { name: input.name })),

  list: teamRoute("GET", "/v1/api-keys", "api-keys")
    .input(ZNoInput)
    .output(z.array(ZApiKey))
    .query(async ({ ctx }) =>
      (await listApiKeys(ctx.db, ctx.caller.teamId)).map((k) => ({
        id: k.id,
        name: k.name,
        prefix: k.prefix,
        createdAt: iso(k.createdAt),
        lastUsedAt: isoOrNull(k.lastUsedAt),
        revokedAt: isoOrNull(k.revokedAt),
      })),
    ),

  revoke: teamRoute("DELETE", "/v1/api-keys/{keyId}", "api-keys")
    .input(ZApiKeyIdRequest)
    .output(ZRevoked)
    .mutation(async ({ ctx, input }) => {
      if (!(await revokeApiKey(ctx.db, ctx.caller.teamId, input.keyId))) notFound("API key", input.keyId);
      // At once in this process; every other one forgets it on the revocation notice.
      ctx.keyRevoked();
      return { revoked: true as const };
    }),
});
