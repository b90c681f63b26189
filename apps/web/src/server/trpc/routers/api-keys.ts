import { createApiKey, listApiKeys, revokeApiKey } from "@opentinker/db";
import { z } from "zod";
import { forgetAuthenticatedKeys } from "../../api/context.ts";
import { notFound, router, teamProcedure } from "../init.ts";
import { iso, isoOrNull } from "../serialize.ts";

const ZApiKey = z.object({
  id: z.string(),
  name: z.string(),
  prefix: z.string(),
  createdAt: z.string(),
  lastUsedAt: z.string().nullable(),
  revokedAt: z.string().nullable(),
});

export const apiKeysRouter = router({
  create: teamProcedure
    .meta({ openapi: { method: "POST", path: "/v1/api-keys", protect: true, tags: ["api-keys"] } })
    .input(z.object({ name: z.string().min(1).max(128) }))
    .output(z.object({ id: z.string(), name: z.string(), prefix: z.string(), key: z.string() }))
    // The plaintext key is in this response only; the database keeps a hash.
    .mutation(({ ctx, input }) => createApiKey(ctx.db, ctx.caller.teamId, { name: input.name })),

  list: teamProcedure
    .meta({ openapi: { method: "GET", path: "/v1/api-keys", protect: true, tags: ["api-keys"] } })
    .input(z.object({}))
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

  revoke: teamProcedure
    .meta({ openapi: { method: "DELETE", path: "/v1/api-keys/{keyId}", protect: true, tags: ["api-keys"] } })
    .input(z.object({ keyId: z.string().min(1) }))
    .output(z.object({ revoked: z.literal(true) }))
    .mutation(async ({ ctx, input }) => {
      if (!(await revokeApiKey(ctx.db, ctx.caller.teamId, input.keyId))) notFound("API key", input.keyId);
      // At once in this process; every other one forgets it on the revocation notice.
      forgetAuthenticatedKeys();
      return { revoked: true as const };
    }),
});
