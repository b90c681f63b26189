// A small but real byte-level BPE tokenizer in the Qwen2 format: 256 byte tokens
// (so any text encodes), a few merges of common English pairs, and the ChatML
// special tokens. tokenizer.json and tokenizer_config.json as transformers writes them.
// `byteLevelBpeFiles` takes any merge list (the built-in models train their own).

export const ENDOFTEXT = "<|endoftext|>";
export const IM_START = "<|im_start|>";
export const IM_END = "<|im_end|>";
/** The image placeholder of a vision-language tiny model. */
export const IMAGE_TOKEN = "<|image|>";

/** ChatML, as in Qwen2.5 / SmolLM2-Instruct, without a default system message. */
export const CHATML_TEMPLATE =
  "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

// Qwen2's pre-tokenizer split: contractions, letter runs (with one leading
// non-letter), single digits, punctuation runs, newlines, spaces.
export const QWEN2_SPLIT_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Merges over plain text; each side must already be a token when its merge is added. */
const MERGES: readonly TextMerge[] = [
  [" ", "t"],
  ["h", "e"],
  ["i", "n"],
  [" ", "a"],
  ["e", "r"],
  ["o", "n"],
  [" t", "he"],
  ["r", "e"],
  ["a", "t"],
  [" ", "s"],
  ["e", "n"],
  ["o", "r"],
  [" ", "w"],
  ["i", "s"],
  ["e", "s"],
  ["a", "n"],
  [" ", "o"],
  ["i", "t"],
  ["a", "r"],
  ["n", "d"],
  [" a", "nd"],
  [" ", "i"],
  ["in", "g"],
  [" ", "c"],
];

/** GPT-2's byte → printable character map used by every byte-level BPE vocabulary. */
export function byteToUnicode(): string[] {
  const map: string[] = new Array(256);
  let next = 256;
  for (let byte = 0; byte < 256; byte++) {
    const printable =
      (byte >= 33 && byte <= 126) || (byte >= 161 && byte <= 172) || (byte >= 174 && byte <= 255);
    map[byte] = String.fromCharCode(printable ? byte : next++);
  }
  return map;
}

export function toByteLevel(text: string, map: readonly string[]): string {
  return [...new TextEncoder().encode(text)].map((byte) => map[byte]).join("");
}

export interface TinyTokenizerFiles {
  tokenizerJson: Record<string, unknown>;
  tokenizerConfig: Record<string, unknown>;
  /** Number of tokens, special tokens included (ids 0 … size-1). */
  size: number;
  ids: { endOfText: number; imStart: number; imEnd: number; image?: number };
}

function addedToken(id: number, content: string) {
  return { id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: true };
}

/** A merge of two pieces of plain text, each already a token when the merge is added. */
export type TextMerge = readonly [string, string];

/** The vocabulary: id = byte value for the 256 byte tokens, then one id per merge. */
function buildVocab(textMerges: readonly TextMerge[]): {
  vocab: Record<string, number>;
  merges: [string, string][];
} {
  const map = byteToUnicode();
  const vocab: Record<string, number> = {};
  map.forEach((char, byte) => {
    vocab[char] = byte;
  });
  const merges: [string, string][] = [];
  for (const [left, right] of textMerges) {
    const pair: [string, string] = [toByteLevel(left, map), toByteLevel(right, map)];
    if (vocab[pair[0]] === undefined || vocab[pair[1]] === undefined) {
      throw new Error(`merge ${JSON.stringify([left, right])} uses a token not yet in the vocabulary`);
    }
    if (vocab[pair[0] + pair[1]] !== undefined) {
      throw new Error(
        `merge ${JSON.stringify([left, right])} makes a token that is already in the vocabulary`,
      );
    }
    vocab[pair[0] + pair[1]] = Object.keys(vocab).length;
    merges.push(pair);
  }
  return { vocab, merges };
}

/**
 * Builds tokenizer.json and tokenizer_config.json contents. `imageToken` adds the
 * `<|image|>` special token after the ChatML ones (vision-language models).
 */
export function tinyTokenizerFiles(
  modelMaxLength = 512,
  imageToken = false,
  textMerges: readonly TextMerge[] = MERGES,
): TinyTokenizerFiles {
  const { vocab, merges } = buildVocab(textMerges);
  const base = Object.keys(vocab).length;
  const ids: TinyTokenizerFiles["ids"] = { endOfText: base, imStart: base + 1, imEnd: base + 2 };
  const specials = [
    addedToken(ids.endOfText, ENDOFTEXT),
    addedToken(ids.imStart, IM_START),
    addedToken(ids.imEnd, IM_END),
  ];
  if (imageToken) {
    ids.image = base + 3;
    specials.push(addedToken(ids.image, IMAGE_TOKEN));
  }
  const byteLevel = { type: "ByteLevel", add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizerJson = {
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specials,
    normalizer: { type: "NFC" },
    pre_tokenizer: {
      type: "Sequence",
      pretokenizers: [
        { type: "Split", pattern: { Regex: QWEN2_SPLIT_PATTERN }, behavior: "Isolated", invert: false },
        byteLevel,
      ],
    },
    post_processor: byteLevel,
    decoder: byteLevel,
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges,
    },
  };
  const tokenizerConfig = {
    add_bos_token: false,
    add_prefix_space: false,
    added_tokens_decoder: Object.fromEntries(specials.map(({ id, ...token }) => [String(id), token])),
    additional_special_tokens: [IM_START, IM_END, ...(imageToken ? [IMAGE_TOKEN] : [])],
    bos_token: null,
    chat_template: CHATML_TEMPLATE,
    clean_up_tokenization_spaces: false,
    eos_token: IM_END,
    errors: "replace",
    model_max_length: modelMaxLength,
    pad_token: ENDOFTEXT,
    split_special_tokens: false,
    tokenizer_class: "Qwen2Tokenizer",
    unk_token: null,
  };
  return { tokenizerJson, tokenizerConfig, size: base + specials.length, ids };
}

/**
 * The same files with another merge list (in priority order), e.g. one trained
 * on a corpus: the built-in models' tokenizers.
 */
export function byteLevelBpeFiles(
  textMerges: readonly TextMerge[],
  modelMaxLength = 512,
): TinyTokenizerFiles {
  return tinyTokenizerFiles(modelMaxLength, false, textMerges);
}
