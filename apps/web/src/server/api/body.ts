// Request bodies, read the same way by every API route (REST, tRPC, auth): the
// size and the nesting depth are capped before anything is parsed, so a hostile
// body costs a bounded amount of work and is refused with a message that says why.
// Also the one home of the rule that no text a caller sends holds a NUL byte
// (`refuseNulBytes`), which every front applies where its input enters.
import type { IncomingMessage } from "node:http";

/** Request bodies larger than this are refused with 413 before they are parsed. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

/** No request of ours nests deeper than a dozen levels; deeper input is refused unparsed. */
export const MAX_JSON_DEPTH = 64;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }

  /** The error code sent beside the message (tRPC's names). */
  get code(): "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA_TYPE" | "BAD_REQUEST" {
    if (this.status === 413) return "PAYLOAD_TOO_LARGE";
    return this.status === 415 ? "UNSUPPORTED_MEDIA_TYPE" : "BAD_REQUEST";
  }
}

/** The body as text, refusing more than `limit` bytes (declared or sent). */
export async function readBodyText(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<string> {
  return (await readBodyBytes(req, limit)).toString("utf8");
}

/** The body's bytes, refusing more than `limit` bytes (declared or sent). */
export async function readBodyBytes(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<Buffer> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (declared > limit) throw new HttpError(413, `request body is ${declared} bytes; the limit is ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, `request body is over the limit of ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

type Frame = { kind: "{"; key: string; expectKey: boolean } | { kind: "["; index: number };

/**
 * Where JSON text first nests deeper than `maxDepth`, as a field path
 * ("data.0.modelInput", cut to four parts), or null. One pass over the text that
 * tracks only strings, brackets, keys and indices: nothing is built.
 */
export function tooDeepAt(text: string, maxDepth = MAX_JSON_DEPTH): string | null {
  const frames: Frame[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    const top = frames.at(-1);
    if (c === '"') {
      let end = i + 1;
      while (end < text.length && text[end] !== '"') end += text[end] === "\\" ? 2 : 1;
      if (top?.kind === "{" && top.expectKey) {
        top.key = text.slice(i + 1, end);
        top.expectKey = false;
      }
      i = end;
    } else if (c === "{" || c === "[") {
      if (frames.length >= maxDepth)
        return (
          frames
            .slice(0, 4)
            .map((f) => (f.kind === "{" ? f.key : f.index))
            .join(".") || "body"
        );
      frames.push(c === "{" ? { kind: "{", key: "", expectKey: true } : { kind: "[", index: 0 });
    } else if (c === "}" || c === "]") {
      frames.pop();
    } else if (c === "," && top) {
      if (top.kind === "[") top.index++;
      else top.expectKey = true;
    }
  }
  return null;
}

/** Refuses JSON text nested deeper than MAX_JSON_DEPTH, naming where (400), without parsing it. */
export function checkJsonDepth(text: string): void {
  const deep = tooDeepAt(text);
  if (deep !== null) throw new HttpError(400, `${deep}: nested deeper than ${MAX_JSON_DEPTH} levels`);
}

const NUL = "\u0000";

/** A path segment as a message shows it (a key holding a NUL byte is shown escaped). */
const segment = (key: string | number): string =>
  typeof key === "number" ? String(key) : JSON.stringify(key).slice(1, -1);

/**
 * Where `value` first holds a NUL byte, in a string or an object's key, as a
 * field path under `root` ("data.0.name"; "body" for the value itself); null
 * when nowhere. Postgres cannot store a NUL byte in text (error 22021) and no
 * name or id of ours needs one.
 */
export function nulByteAt(value: unknown, root = ""): string | null {
  const path: (string | number)[] = root ? [root] : [];
  const at = () => path.map(segment).join(".") || "body";
  // Depth-first over one shared path: no copy per element (arrays of numbers are long).
  const visit = (key: string | number, child: unknown): string | null => {
    if (typeof child !== "string" && (typeof child !== "object" || child === null) && typeof key === "number")
      return null;
    path.push(key);
    const found = typeof key === "string" && key.includes(NUL) ? at() : walk(child);
    path.pop();
    return found;
  };
  const walk = (v: unknown): string | null => {
    if (typeof v === "string") return v.includes(NUL) ? at() : null;
    // Binary fields (a protobuf body's bytes) are values, not text.
    if (typeof v !== "object" || v === null || ArrayBuffer.isView(v)) return null;
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) {
        const found = visit(i, v[i]);
        if (found !== null) return found;
      }
      return null;
    }
    for (const [key, child] of Object.entries(v)) {
      const found = visit(key, child);
      if (found !== null) return found;
    }
    return null;
  };
  return walk(value);
}

/** The refusal of a NUL byte in the field at `path`. */
export const nulByteMessage = (path: string): string =>
  `${path}: contains a NUL byte (\\u0000), which no text field accepts`;

/** Refuses (400, naming the field) a value holding a NUL byte anywhere. */
export function refuseNulBytes(value: unknown, root = ""): void {
  const path = nulByteAt(value, root);
  if (path !== null) throw new HttpError(400, nulByteMessage(path));
}

/**
 * Whether JSON text may decode to a string holding a NUL byte: JSON writes one
 * only as the escape \u0000 (raw control characters are not JSON), so other
 * text needs no walk once parsed.
 */
export const jsonMayHoldNul = (text: string): boolean => text.includes("\\u0000");

/** Parses JSON text after the depth check, refusing NUL bytes; empty text is `{}`. */
export function parseJsonText(text: string): unknown {
  if (text.trim() === "") return {};
  checkJsonDepth(text);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `malformed JSON body: ${(error as Error).message}`);
  }
  if (jsonMayHoldNul(text)) refuseNulBytes(parsed);
  return parsed;
}

/** A POST body's media type must be JSON whenever there is a body (415 otherwise). */
export function requireJsonContentType(req: IncomingMessage): void {
  const type = req.headers["content-type"] ?? "";
  const hasBody =
    Number(req.headers["content-length"] ?? 0) > 0 || req.headers["transfer-encoding"] !== undefined;
  if (hasBody && !/^application\/json\s*(;|$)/i.test(type))
    throw new HttpError(415, `send the body as JSON with content-type: application/json (got "${type}")`);
}

/** Reads, checks and parses a JSON body. */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  requireJsonContentType(req);
  return parseJsonText(await readBodyText(req, limit));
}
