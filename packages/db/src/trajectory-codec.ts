import { endianness } from "node:os";

// Per-token arrays are stored as little-endian bytes: 4 bytes a token for tokens,
// logprobs and advantages, 1 for the mask. Typed arrays use the platform's byte
// order, so refuse to run where that would silently corrupt stored data.
if (endianness() !== "LE") throw new Error("trajectory-codec: big-endian platforms are not supported");

export interface TrajectoryArrays {
  tokens: Int32Array; // [tokenCount]
  mask: Uint8Array; // [tokenCount], 1 = model action token
  logprobs: Float32Array; // [tokenCount], rollout policy's logprob (0 off the mask)
  advantages: Float32Array; // [tokenCount]
}

export interface EncodedTrajectoryArrays {
  tokenCount: number;
  tokens: Uint8Array<ArrayBuffer>;
  mask: Uint8Array<ArrayBuffer>;
  logprobs: Uint8Array<ArrayBuffer>;
  advantages: Uint8Array<ArrayBuffer>;
}

function bytesOf(view: ArrayBufferView): Uint8Array<ArrayBuffer> {
  // Copy, so the stored bytes never alias a buffer the caller keeps mutating.
  return new Uint8Array(view.buffer.slice(view.byteOffset, view.byteOffset + view.byteLength) as ArrayBuffer);
}

export function encodeTrajectoryArrays(arrays: TrajectoryArrays): EncodedTrajectoryArrays {
  const n = arrays.tokens.length;
  for (const [name, array] of Object.entries(arrays) as [string, ArrayLike<number>][]) {
    if (array.length !== n) {
      throw new RangeError(`encodeTrajectoryArrays: ${name} has ${array.length} entries, tokens has ${n}`);
    }
  }
  for (let i = 0; i < n; i++) {
    const m = arrays.mask[i];
    if (m !== 0 && m !== 1)
      throw new RangeError(`encodeTrajectoryArrays: mask[${i}] is ${m}, expected 0 or 1`);
  }
  return {
    tokenCount: n,
    tokens: bytesOf(arrays.tokens),
    mask: bytesOf(arrays.mask),
    logprobs: bytesOf(arrays.logprobs),
    advantages: bytesOf(arrays.advantages),
  };
}

function copyAligned(bytes: Uint8Array, expectedBytes: number, field: string): ArrayBuffer {
  if (bytes.byteLength !== expectedBytes) {
    throw new RangeError(
      `decodeTrajectoryArrays: ${field} has ${bytes.byteLength} bytes, expected ${expectedBytes}`,
    );
  }
  return bytes.slice().buffer as ArrayBuffer;
}

export function decodeTrajectoryArrays(row: {
  tokenCount: number;
  tokens: Uint8Array;
  mask: Uint8Array;
  logprobs: Uint8Array;
  advantages: Uint8Array;
}): TrajectoryArrays {
  const n = row.tokenCount;
  return {
    tokens: new Int32Array(copyAligned(row.tokens, 4 * n, "tokens")),
    mask: new Uint8Array(copyAligned(row.mask, n, "mask")),
    logprobs: new Float32Array(copyAligned(row.logprobs, 4 * n, "logprobs")),
    advantages: new Float32Array(copyAligned(row.advantages, 4 * n, "advantages")),
  };
}
