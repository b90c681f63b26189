import { z } from "zod";

const ZTokenId = z.number().int().min(0, "token ids are non-negative");

/** Already-tokenised text. */
export const ZEncodedTextChunk = z.object({
  type: z.literal("encoded_text"),
  tokens: z.array(ZTokenId),
});

/**
 * An image for a vision-language model, as PNG or JPEG bytes (base64 on the
 * wire), occupying `expectedTokens` positions of the sequence.
 */
export const ZImageChunk = z.object({
  type: z.literal("image"),
  format: z.enum(["png", "jpeg"]),
  data: z.string().min(1, "image data is empty"),
  expectedTokens: z.number().int().positive(),
});

export const ZModelInputChunk = z.discriminatedUnion("type", [ZEncodedTextChunk, ZImageChunk]);
export const ZModelInput = z.object({ chunks: z.array(ZModelInputChunk) });

export type EncodedTextChunk = z.infer<typeof ZEncodedTextChunk>;
export type ImageChunk = z.infer<typeof ZImageChunk>;
export type ModelInputChunk = z.infer<typeof ZModelInputChunk>;
export type ModelInput = z.infer<typeof ZModelInput>;

export function modelInputFromTokens(tokens: readonly number[]): ModelInput {
  return { chunks: [{ type: "encoded_text", tokens: [...tokens] }] };
}

/** Number of sequence positions: text tokens plus each image's expected tokens. */
export function modelInputLength(input: ModelInput): number {
  let length = 0;
  for (const chunk of input.chunks)
    length += chunk.type === "encoded_text" ? chunk.tokens.length : chunk.expectedTokens;
  return length;
}

/** The text tokens of an input with no images; throws if it has any. */
export function modelInputTokens(input: ModelInput): number[] {
  const tokens: number[] = [];
  for (const chunk of input.chunks) {
    if (chunk.type !== "encoded_text") throw new TypeError("modelInputTokens: the input has an image chunk");
    tokens.push(...chunk.tokens);
  }
  return tokens;
}

/** The id stored for a position an image covers, where a sequence is kept as plain ids (trajectories). */
export const IMAGE_POSITION_TOKEN = -1;

/** One id per position: the text tokens, and IMAGE_POSITION_TOKEN for each image position. */
export function modelInputPositionTokens(input: ModelInput): number[] {
  const tokens: number[] = [];
  for (const chunk of input.chunks) {
    if (chunk.type === "encoded_text") tokens.push(...chunk.tokens);
    else for (let i = 0; i < chunk.expectedTokens; i++) tokens.push(IMAGE_POSITION_TOKEN);
  }
  return tokens;
}

/** Appends tokens, merging into the last text chunk. */
export function appendTokens(input: ModelInput, tokens: readonly number[]): ModelInput {
  const chunks = [...input.chunks];
  const last = chunks[chunks.length - 1];
  if (last?.type === "encoded_text")
    chunks[chunks.length - 1] = { ...last, tokens: [...last.tokens, ...tokens] };
  else chunks.push({ type: "encoded_text", tokens: [...tokens] });
  return { chunks };
}

/**
 * The input without its last `count` positions, which must be text (used to
 * shift a sequence onto the target axis).
 */
export function dropLastTokens(input: ModelInput, count: number): ModelInput {
  const chunks = [...input.chunks];
  let remaining = count;
  while (remaining > 0) {
    const last = chunks.pop();
    if (!last) throw new RangeError(`dropLastTokens: the input has fewer than ${count} positions`);
    if (last.type !== "encoded_text")
      throw new RangeError("dropLastTokens: cannot drop positions of an image");
    if (last.tokens.length > remaining) {
      chunks.push({ ...last, tokens: last.tokens.slice(0, last.tokens.length - remaining) });
      remaining = 0;
    } else {
      remaining -= last.tokens.length;
    }
  }
  return { chunks };
}
