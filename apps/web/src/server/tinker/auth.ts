// Who calls the Tinker front. The SDK sends `X-API-Key`: either one of our keys
// with `tml-` in front, or a short-lived JWT it got for such a key from
// `POST /api/v1/auth/token` (the config turns that exchange on, so that
// `RestClient.whoami()` has claims to read). A JWT names the key it was minted
// for, and that key is checked again (through the same revocation-aware cache
// as the keys themselves), so revoking the key ends its JWTs at once.
import { createHmac } from "node:crypto";
import type { Caller } from "@opentinker/api";
import type { Db } from "@opentinker/db";
import { fromTinkerApiKey } from "@opentinker/protocol";
import { jwtVerify, SignJWT } from "jose";
import { callerFromApiKey, callerFromApiKeyId } from "../api/context.ts";

/** How long a minted JWT lives; the SDK refreshes it five minutes before it ends. */
export const JWT_TTL_S = 3600;
const ISSUER = "opentinker";

/** A key for one purpose derived from the service's secret, so no two uses share a key. */
export const derivedKey = (secret: string, purpose: string) =>
  createHmac("sha256", secret).update(`opentinker:${purpose}`).digest();

async function jwtKeyId(secret: string, token: string): Promise<string | null> {
  try {
    const { payload } = await jwtVerify(token, derivedKey(secret, "tinker-jwt"), {
      issuer: ISSUER,
      algorithms: ["HS256"],
    });
    return typeof payload.key === "string" ? payload.key : null;
  } catch {
    return null;
  }
}

/** The caller behind an `X-API-Key` value, or null for a missing, unknown, revoked or expired one. */
export async function tinkerCaller(db: Db, secret: string, header: string): Promise<Caller | null> {
  const key = fromTinkerApiKey(header);
  if (key) return callerFromApiKey(db, key);
  const keyId = header.startsWith("eyJ") ? await jwtKeyId(secret, header) : null;
  return keyId ? callerFromApiKeyId(db, keyId) : null;
}

/** A JWT for the caller's API key: `sub` names the team and key, `email` whoever created the key. */
export function mintJwt(secret: string, caller: Caller, apiKeyId: string, email: string | null) {
  return new SignJWT({ key: apiKeyId, team: caller.teamSlug, email: email ?? "" })
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setIssuer(ISSUER)
    .setSubject(`urn:opentinker:team:${caller.teamSlug}:key:${apiKeyId}`)
    .setIssuedAt()
    .setExpirationTime(`${JWT_TTL_S}s`)
    .sign(derivedKey(secret, "tinker-jwt"));
}
