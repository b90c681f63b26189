// Tokenizer and chat template of a Hugging Face model directory: `tokenizer.json`
// through @huggingface/tokenizers, `tokenizer_config.json` (special tokens, added
// tokens, chat template) through @huggingface/jinja. Behaviour follows
// transformers: encode adds the post-processor's special tokens by default, and
// ids without a token are skipped when decoding, as the Rust tokenizers do.
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { Template } from "@huggingface/jinja";
import { Tokenizer } from "@huggingface/tokenizers";
import { z } from "zod";
import { describeValue, isNotFound, parseWithSchema, readJsonFile } from "./json-files.ts";

export interface ChatMessage {
  role: string;
  content: string;
}

export interface TextTokenizer {
  encode(text: string, options?: { addSpecialTokens?: boolean }): number[];
  decode(ids: readonly number[], options?: { skipSpecialTokens?: boolean }): string;
  /** One more than the largest token id, added tokens included. */
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: number[];
  readonly padTokenId: number | null;
  tokenId(token: string): number | undefined;
  /** Renders the chat template to text (tokenize it with `addSpecialTokens: false`). */
  applyChatTemplate(messages: readonly ChatMessage[], options?: { addGenerationPrompt?: boolean }): string;
}

// Older configs spell a special token as { content, … } (an AddedToken) instead of a string.
const TokenField = z.union([z.string(), z.looseObject({ content: z.string() })]).nullish();

const AddedTokenSchema = z.looseObject({
  id: z.number().int().nonnegative(),
  content: z.string(),
  special: z.boolean().optional(),
});

const TokenizerJsonSchema = z.looseObject({
  model: z.looseObject({}),
  added_tokens: z.array(AddedTokenSchema).nullish(),
});

const TokenizerConfigSchema = z.looseObject({
  bos_token: TokenField,
  eos_token: TokenField,
  pad_token: TokenField,
  unk_token: TokenField,
  additional_special_tokens: z.array(TokenField).nullish(),
  chat_template: z
    .union([z.string(), z.array(z.object({ name: z.string(), template: z.string() }))])
    .nullish(),
  added_tokens_decoder: z.record(z.string(), z.looseObject({ content: z.string() })).nullish(),
});

type TokenizerJson = z.output<typeof TokenizerJsonSchema>;
type TokenizerConfig = z.output<typeof TokenizerConfigSchema>;
type AddedToken = z.output<typeof AddedTokenSchema>;

function tokenText(field: z.output<typeof TokenField>): string | undefined {
  if (field == null) return undefined;
  return typeof field === "string" ? field : field.content;
}

/** A named template list (transformers' multi-template form) resolves to "default". */
function pickChatTemplate(value: TokenizerConfig["chat_template"]): string | undefined {
  if (value == null || typeof value === "string") return value ?? undefined;
  return (value.find((entry) => entry.name === "default") ?? value[0])?.template;
}

/**
 * tokenizer_config.json may list added tokens that tokenizer.json lacks (transformers
 * merges both); tokenizers.js reads only tokenizer.json, so merge them here.
 */
function mergeAddedTokens(json: TokenizerJson, config: TokenizerConfig, source: string): AddedToken[] {
  const tokens = [...(json.added_tokens ?? [])];
  const known = new Set(tokens.map((token) => token.id));
  for (const [key, token] of Object.entries(config.added_tokens_decoder ?? {})) {
    const id = Number(key);
    if (!Number.isInteger(id) || id < 0) {
      throw new Error(`${source}: added_tokens_decoder key ${describeValue(key)} is not a token id`);
    }
    if (!known.has(id)) tokens.push({ special: false, ...token, id });
  }
  return tokens;
}

/** The config handed to tokenizers.js: token fields as plain strings, as it expects. */
function normaliseConfig(config: TokenizerConfig): Record<string, unknown> {
  return {
    ...config,
    bos_token: tokenText(config.bos_token),
    eos_token: tokenText(config.eos_token),
    pad_token: tokenText(config.pad_token),
    unk_token: tokenText(config.unk_token),
    additional_special_tokens: (config.additional_special_tokens ?? [])
      .map(tokenText)
      .filter((t) => t !== undefined),
  };
}

export interface TokenizerSources {
  /** Names tokenizer.json in errors. */
  tokenizerPath: string;
  /** Names tokenizer_config.json in errors. */
  configPath: string;
  /** A chat template kept outside tokenizer_config.json (chat_template.jinja), and its path. */
  chatTemplate?: { text: string; path: string };
}

// A loop, not Math.max(...ids): spreading a 150k-entry vocabulary overflows the call stack.
function largestId(tokenizer: Tokenizer): number {
  let largest = -1;
  for (const id of tokenizer.get_vocab(true).values()) largest = Math.max(largest, id);
  return largest;
}

class HfTextTokenizer implements TextTokenizer {
  readonly vocabSize: number;
  readonly bosTokenId: number | null;
  readonly eosTokenIds: number[];
  readonly padTokenId: number | null;
  private readonly specialTokens: Record<string, string>;
  private template: Template | undefined;

  constructor(
    private readonly tokenizer: Tokenizer,
    config: TokenizerConfig,
    private readonly chatTemplate: { text: string; path: string } | undefined,
    private readonly sources: TokenizerSources,
  ) {
    this.vocabSize = largestId(tokenizer) + 1;
    this.specialTokens = {};
    for (const key of ["bos_token", "eos_token", "pad_token", "unk_token"] as const) {
      const text = tokenText(config[key]);
      if (text !== undefined) this.specialTokens[key] = text;
    }
    this.bosTokenId = this.requireSpecial("bos_token");
    const eos = this.requireSpecial("eos_token");
    this.eosTokenIds = eos === null ? [] : [eos];
    this.padTokenId = this.requireSpecial("pad_token");
  }

  /** A special token named in the config must exist in the vocabulary. */
  private requireSpecial(key: string): number | null {
    const text = this.specialTokens[key];
    if (text === undefined) return null;
    const id = this.tokenId(text);
    if (id === undefined) {
      throw new Error(`${this.sources.configPath}: ${key} ${describeValue(text)} is not in the vocabulary`);
    }
    return id;
  }

  encode(text: string, options: { addSpecialTokens?: boolean } = {}): number[] {
    return this.tokenizer.encode(text, { add_special_tokens: options.addSpecialTokens ?? true }).ids;
  }

  decode(ids: readonly number[], options: { skipSpecialTokens?: boolean } = {}): string {
    const bad = ids.find((id) => !Number.isInteger(id) || id < 0);
    if (bad !== undefined) throw new RangeError(`cannot decode token id ${bad}`);
    // Padded vocabularies (config vocab_size > tokenizer size) have ids with no token.
    const known = ids.filter((id) => this.tokenizer.id_to_token(id) !== undefined);
    if (known.length === 0) return "";
    return this.tokenizer.decode(known, { skip_special_tokens: options.skipSpecialTokens ?? false });
  }

  tokenId(token: string): number | undefined {
    return this.tokenizer.token_to_id(token);
  }

  applyChatTemplate(
    messages: readonly ChatMessage[],
    options: { addGenerationPrompt?: boolean } = {},
  ): string {
    const template = this.compiledTemplate();
    try {
      return template.render({
        ...this.specialTokens,
        messages: messages.map(({ role, content }) => ({ role, content })),
        add_generation_prompt: options.addGenerationPrompt ?? false,
      });
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`${this.chatTemplate?.path}: chat_template failed to render (${reason})`);
    }
  }

  // Compiled on first use, so a model whose template we cannot parse still tokenizes.
  private compiledTemplate(): Template {
    if (this.template) return this.template;
    if (this.chatTemplate === undefined) throw new Error(`${this.sources.configPath}: no chat_template`);
    try {
      this.template = new Template(this.chatTemplate.text);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      throw new Error(`${this.chatTemplate.path}: chat_template does not parse (${reason})`);
    }
    return this.template;
  }
}

/** Builds a tokenizer from the parsed contents of tokenizer.json and tokenizer_config.json. */
export function createTextTokenizer(
  tokenizerJson: unknown,
  tokenizerConfig: unknown,
  sources: TokenizerSources = { tokenizerPath: "tokenizer.json", configPath: "tokenizer_config.json" },
): TextTokenizer {
  const json = parseWithSchema(TokenizerJsonSchema, tokenizerJson, sources.tokenizerPath);
  const config = parseWithSchema(TokenizerConfigSchema, tokenizerConfig, sources.configPath);
  const merged = {
    // tokenizers.js wants every component key present, even when null.
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    ...json,
    added_tokens: mergeAddedTokens(json, config, sources.configPath),
  };
  let tokenizer: Tokenizer;
  try {
    tokenizer = new Tokenizer(merged, normaliseConfig(config));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new Error(`${sources.tokenizerPath}: cannot build the tokenizer (${reason})`);
  }
  const inConfig = pickChatTemplate(config.chat_template);
  const chatTemplate =
    inConfig !== undefined ? { text: inConfig, path: sources.configPath } : sources.chatTemplate;
  return new HfTextTokenizer(tokenizer, config, chatTemplate, sources);
}

async function readOptionalText(path: string): Promise<string | undefined> {
  try {
    return await readFile(path, "utf8");
  } catch (error) {
    if (isNotFound(error)) return undefined;
    throw error;
  }
}

/**
 * Loads `<dir>/tokenizer.json` and `<dir>/tokenizer_config.json`; the chat template
 * comes from tokenizer_config.json or, as newer transformers save it, `chat_template.jinja`.
 */
export async function loadTokenizer(dir: string): Promise<TextTokenizer> {
  const tokenizerPath = join(dir, "tokenizer.json");
  const configPath = join(dir, "tokenizer_config.json");
  const templatePath = join(dir, "chat_template.jinja");
  const [tokenizerJson, tokenizerConfig, templateText] = await Promise.all([
    readJsonFile(tokenizerPath, "a Hugging Face tokenizer.json"),
    readJsonFile(configPath, "a Hugging Face tokenizer_config.json"),
    readOptionalText(templatePath),
  ]);
  const chatTemplate = templateText === undefined ? undefined : { text: templateText, path: templatePath };
  return createTextTokenizer(tokenizerJson, tokenizerConfig, { tokenizerPath, configPath, chatTemplate });
}
