// zstd-compressed request bodies (the SDK compresses forward/backward bodies
// when the config asks it to). The body is capped twice: its compressed bytes
// when read, and what it decompresses to. Before anything is decompressed,
// every frame's header is checked, so a small body that declares a huge window
// or content size is refused without allocating it (RFC 8878 §3.1).
import { Decompress } from "fzstd";
import { HttpError } from "../api/body.ts";

const FRAME_MAGIC = 0xfd2fb528;
const SKIPPABLE = 0x184d2a50;

const refuse = (message: string): never => {
  throw new HttpError(400, `zstd body: ${message}`);
};

function readUint(bytes: Uint8Array, at: number, width: number): number {
  if (at + width > bytes.length) refuse("truncated frame");
  let value = 0;
  for (let i = width - 1; i >= 0; i--) value = value * 256 + (bytes[at + i] as number);
  return value;
}

/** Walks one frame (header and blocks) from `at`, checking its sizes against `limit`; returns where it ends. */
function checkFrame(bytes: Uint8Array, at: number, limit: number): number {
  const descriptor = readUint(bytes, at + 4, 1);
  const fcsFlag = descriptor >> 6;
  const singleSegment = (descriptor >> 5) & 1;
  const hasChecksum = (descriptor >> 2) & 1;
  const dictBytes = [0, 1, 2, 4][descriptor & 3] as number;
  let p = at + 5;
  if (!singleSegment) {
    const wd = readUint(bytes, p++, 1);
    const base = 2 ** (10 + (wd >> 3));
    const window = base + (base / 8) * (wd & 7);
    if (window > limit) refuse(`a frame's window of ${window} bytes is over the limit of ${limit}`);
  }
  p += dictBytes;
  const fcsBytes = fcsFlag === 0 ? singleSegment : 2 ** fcsFlag;
  if (fcsBytes > 0) {
    const size = readUint(bytes, p, fcsBytes) + (fcsBytes === 2 ? 256 : 0);
    if (size > limit) refuse(`a frame declares ${size} bytes, over the limit of ${limit}`);
    p += fcsBytes;
  }
  for (let last = 0; !last; ) {
    const header = readUint(bytes, p, 3);
    last = header & 1;
    const type = (header >> 1) & 3;
    if (type === 3) refuse("reserved block type");
    p += 3 + (type === 1 ? 1 : header >> 3);
  }
  return p + (hasChecksum ? 4 : 0);
}

function checkFrames(bytes: Uint8Array, limit: number): void {
  if (bytes.length === 0) refuse("empty");
  for (let at = 0; at < bytes.length; ) {
    const magic = readUint(bytes, at, 4);
    if (magic === FRAME_MAGIC) at = checkFrame(bytes, at, limit);
    else if ((magic & 0xfffffff0) >>> 0 === SKIPPABLE) at += 8 + readUint(bytes, at + 4, 4);
    else refuse("not a zstd frame");
  }
}

/** The decompressed body, refused (400) when malformed or (413) when it decompresses past `limit` bytes. */
export function decompressZstd(bytes: Uint8Array, limit: number): Buffer {
  checkFrames(bytes, limit);
  const parts: Uint8Array[] = [];
  let size = 0;
  const stream = new Decompress((chunk) => {
    size += chunk.length;
    if (size > limit) throw new HttpError(413, `request body decompresses past the limit of ${limit} bytes`);
    parts.push(chunk);
  });
  try {
    stream.push(bytes, true);
  } catch (error) {
    if (error instanceof HttpError) throw error;
    refuse((error as Error).message);
  }
  return Buffer.concat(parts);
}
