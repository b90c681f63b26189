import type { IncomingMessage } from "node:http";

/** Request bodies larger than this are refused with 413 before they are parsed. */
export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Reads and parses a JSON body, naming what was wrong with it. */
export async function readJsonBody(req: IncomingMessage, limit = MAX_BODY_BYTES): Promise<unknown> {
  const declared = Number(req.headers["content-length"] ?? Number.NaN);
  if (declared > limit) throw new HttpError(413, `request body is ${declared} bytes; the limit is ${limit}`);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) throw new HttpError(413, `request body is over the limit of ${limit} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString("utf8");
  if (text.trim() === "") return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    throw new HttpError(400, `malformed JSON body: ${(error as Error).message}`);
  }
}
