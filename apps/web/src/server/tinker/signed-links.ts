// Download links the Tinker protocol hands out (a checkpoint's archive, a
// session's trace): plain GETs that carry no key, so the link itself says who
// may read what, until when, under an HMAC of the service's secret. The
// download resolves its object again for the team named in the link, so a
// link outlives neither the object nor that team's right to read it.
import { createHmac, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import { derivedKey } from "./auth.ts";
import { TinkerError } from "./convert.ts";

/** How long a link works (the SDK assumes about a quarter of an hour). */
export const LINK_TTL_MS = 15 * 60_000;

export const ZLinkTarget = z.discriminatedUnion("kind", [
  z.object({
    kind: z.literal("archive"),
    /** The team that asked: the checkpoint must still be readable by it. */
    team: z.string(),
    model: z.string(),
    weights: z.enum(["weights", "sampler_weights"]),
    name: z.string(),
  }),
  z.object({ kind: z.literal("trace"), team: z.string(), session: z.string() }),
]);
export type LinkTarget = z.infer<typeof ZLinkTarget>;

const ZLink = z.object({ target: ZLinkTarget, expires: z.number().int() });

const sign = (secret: string, payload: string) =>
  createHmac("sha256", derivedKey(secret, "tinker-links")).update(payload).digest("base64url");

/** A link to `target` under `origin`, and when it stops working. */
export function signLink(secret: string, origin: string, target: LinkTarget) {
  const expires = Date.now() + LINK_TTL_MS;
  const payload = Buffer.from(JSON.stringify({ target, expires })).toString("base64url");
  return {
    url: `${origin}/api/v1/downloads/${payload}.${sign(secret, payload)}`,
    expires: new Date(expires),
  };
}

/** The target of a link's token; a forged, altered or expired one is refused (403) saying which. */
export function verifyLink(secret: string, token: string): LinkTarget {
  const [payload = "", signature = ""] = token.split(".");
  const expected = Buffer.from(sign(secret, payload));
  const given = Buffer.from(signature);
  if (given.length !== expected.length || !timingSafeEqual(given, expected))
    throw new TinkerError(403, "this download link is not valid");
  let link: z.infer<typeof ZLink>;
  try {
    link = ZLink.parse(JSON.parse(Buffer.from(payload, "base64url").toString()));
  } catch {
    throw new TinkerError(403, "this download link is not valid");
  }
  if (link.expires < Date.now())
    throw new TinkerError(403, "this download link has expired; ask for a new one");
  return link.target;
}
