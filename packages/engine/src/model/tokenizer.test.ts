import { rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { createTextTokenizer, loadTokenizer } from "@opentinker/tokenizer";
import { describe, expect, test } from "vitest";
import { tempDir } from "../testing/temp-dir.ts";
import { ENDOFTEXT, IM_END, IM_START, tinyTokenizerFiles } from "../testing/tiny-tokenizer.ts";

const files = tinyTokenizerFiles();
const tokenizer = createTextTokenizer(files.tokenizerJson, files.tokenizerConfig);
const PRINTABLE_ASCII = Array.from({ length: 95 }, (_, i) => String.fromCharCode(32 + i)).join("");

async function writeTokenizerDir(
  tokenizerJson: unknown = files.tokenizerJson,
  tokenizerConfig: unknown = files.tokenizerConfig,
): Promise<string> {
  const dir = await tempDir();
  await writeFile(join(dir, "tokenizer.json"), JSON.stringify(tokenizerJson));
  await writeFile(join(dir, "tokenizer_config.json"), JSON.stringify(tokenizerConfig));
  return dir;
}

describe("encode and decode", () => {
  test.each([
    ["every printable ASCII character", PRINTABLE_ASCII],
    ["a sentence with punctuation and digits", "Hello, world! The answer is 42; 7*6=42."],
    ["tabs, newlines and runs of spaces", "  a\tb\n\nc   d  "],
    ["non-ASCII text (byte-level fallback)", "héllo — 日本語 🙂"],
  ])("%s decodes back to the same text", (_, text) => {
    const ids = tokenizer.encode(text);
    expect(ids.every((id) => id >= 0 && id < tokenizer.vocabSize)).toBe(true);
    expect(tokenizer.decode(ids)).toBe(text);
  });

  test("merges apply: common words take fewer tokens than characters", () => {
    expect(tokenizer.encode(" the and thing").length).toBeLessThan(" the and thing".length);
  });

  test("digits are split one per token, as Qwen2's pre-tokenizer does", () => {
    expect(tokenizer.encode("1234")).toHaveLength(4);
  });

  test("an empty list of ids decodes to the empty string", () => {
    expect(tokenizer.decode([])).toBe("");
    expect(tokenizer.encode("")).toEqual([]);
  });

  test("ids of a padded vocabulary with no token are skipped, as the Rust tokenizers do", () => {
    const ids = [...tokenizer.encode("hi"), tokenizer.vocabSize + 5];
    expect(tokenizer.decode(ids)).toBe("hi");
  });

  test("a negative or fractional id is a RangeError", () => {
    expect(() => tokenizer.decode([1, -1])).toThrow(RangeError);
    expect(() => tokenizer.decode([1.5])).toThrow(RangeError);
  });
});

describe("special tokens", () => {
  test("each ChatML special token encodes to its own single id", () => {
    expect(tokenizer.encode(ENDOFTEXT)).toEqual([files.ids.endOfText]);
    expect(tokenizer.encode(IM_START)).toEqual([files.ids.imStart]);
    expect(tokenizer.encode(IM_END)).toEqual([files.ids.imEnd]);
    expect(tokenizer.tokenId(IM_START)).toBe(files.ids.imStart);
  });

  test("special tokens inside text are recognised and survive decoding", () => {
    const ids = tokenizer.encode(`${IM_START}user\nhi${IM_END}`);
    expect(ids[0]).toBe(files.ids.imStart);
    expect(ids.at(-1)).toBe(files.ids.imEnd);
    expect(tokenizer.decode(ids)).toBe(`${IM_START}user\nhi${IM_END}`);
  });

  test("skipSpecialTokens drops special tokens from the decoded text", () => {
    const ids = tokenizer.encode(`${IM_START}user\nhi${IM_END}${ENDOFTEXT}`);
    expect(tokenizer.decode(ids, { skipSpecialTokens: true })).toBe("user\nhi");
  });

  test("eos, pad and bos ids come from tokenizer_config.json", () => {
    expect(tokenizer.eosTokenIds).toEqual([files.ids.imEnd]);
    expect(tokenizer.padTokenId).toBe(files.ids.endOfText);
    expect(tokenizer.bosTokenId).toBeNull();
    expect(tokenizer.vocabSize).toBe(files.size);
  });

  test("tokenId of an unknown token is undefined", () => {
    expect(tokenizer.tokenId("<|nope|>")).toBeUndefined();
  });

  test("special tokens written as AddedToken objects ({ content }) are understood", () => {
    const config = { ...files.tokenizerConfig, bos_token: { content: ENDOFTEXT, __type: "AddedToken" } };
    expect(createTextTokenizer(files.tokenizerJson, config).bosTokenId).toBe(files.ids.endOfText);
  });

  test("addSpecialTokens controls the post-processor's tokens (here a Llama-3-style BOS)", () => {
    const bos = { id: ENDOFTEXT, ids: [files.ids.endOfText], tokens: [ENDOFTEXT] };
    const json = {
      ...files.tokenizerJson,
      post_processor: {
        type: "TemplateProcessing",
        single: [{ SpecialToken: { id: ENDOFTEXT, type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }],
        pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
        special_tokens: { [ENDOFTEXT]: bos },
      },
    };
    const withBos = createTextTokenizer(json, files.tokenizerConfig);
    expect(withBos.encode("hi")[0]).toBe(files.ids.endOfText);
    expect(withBos.encode("hi", { addSpecialTokens: false })).toEqual(tokenizer.encode("hi"));
  });

  test("added tokens listed only in tokenizer_config.json's added_tokens_decoder are added", () => {
    const id = files.size;
    const config = {
      ...files.tokenizerConfig,
      added_tokens_decoder: { [String(id)]: { content: "<tool_call>", special: false } },
    };
    const extended = createTextTokenizer(files.tokenizerJson, config);
    expect(extended.tokenId("<tool_call>")).toBe(id);
    expect(extended.encode("a<tool_call>b")).toContain(id);
    expect(extended.vocabSize).toBe(files.size + 1);
  });

  test("an eos_token that is not in the vocabulary is an error naming the config", () => {
    const config = { ...files.tokenizerConfig, eos_token: "</s>" };
    expect(() =>
      createTextTokenizer(files.tokenizerJson, config, {
        tokenizerPath: "t.json",
        configPath: "/m/tokenizer_config.json",
      }),
    ).toThrow('/m/tokenizer_config.json: eos_token "</s>" is not in the vocabulary');
  });
});

describe("chat template", () => {
  test("renders ChatML with the generation prompt", () => {
    const text = tokenizer.applyChatTemplate([{ role: "user", content: "What is 2+2?" }], {
      addGenerationPrompt: true,
    });
    expect(text).toBe("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n");
  });

  test("renders a multi-turn conversation without a generation prompt by default", () => {
    const text = tokenizer.applyChatTemplate([
      { role: "system", content: "Be brief." },
      { role: "user", content: "Hi" },
      { role: "assistant", content: "Hello." },
    ]);
    expect(text).toBe(
      "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\nHello.<|im_end|>\n",
    );
  });

  test("the rendered prompt tokenizes with the special tokens as single ids", () => {
    const text = tokenizer.applyChatTemplate([{ role: "user", content: "Hi" }], {
      addGenerationPrompt: true,
    });
    const ids = tokenizer.encode(text, { addSpecialTokens: false });
    expect(ids.filter((id) => id === files.ids.imStart)).toHaveLength(2);
    expect(tokenizer.decode(ids)).toBe(text);
  });

  test("the template sees the special tokens, as transformers passes them", () => {
    const config = { ...files.tokenizerConfig, chat_template: "{{ eos_token }}|{{ pad_token }}" };
    expect(createTextTokenizer(files.tokenizerJson, config).applyChatTemplate([])).toBe(
      `${IM_END}|${ENDOFTEXT}`,
    );
  });

  test("a named template list resolves to the one named default", () => {
    const config = {
      ...files.tokenizerConfig,
      chat_template: [
        { name: "tool_use", template: "tools" },
        { name: "default", template: "plain" },
      ],
    };
    expect(createTextTokenizer(files.tokenizerJson, config).applyChatTemplate([])).toBe("plain");
  });

  test("a tokenizer without a chat template still tokenizes, and applying a template is an error", () => {
    const { chat_template: _, ...config } = files.tokenizerConfig;
    const plain = createTextTokenizer(files.tokenizerJson, config, {
      tokenizerPath: "t.json",
      configPath: "/m/tokenizer_config.json",
    });
    expect(plain.decode(plain.encode("ok"))).toBe("ok");
    expect(() => plain.applyChatTemplate([])).toThrow("/m/tokenizer_config.json: no chat_template");
  });

  test("a template that does not parse is an error naming the file when it is used", () => {
    const config = { ...files.tokenizerConfig, chat_template: "{% for %}" };
    const broken = createTextTokenizer(files.tokenizerJson, config, {
      tokenizerPath: "t",
      configPath: "/m/tc.json",
    });
    expect(() => broken.applyChatTemplate([])).toThrow(/^\/m\/tc\.json: chat_template does not parse/);
  });
});

describe("loadTokenizer", () => {
  test("loads tokenizer.json and tokenizer_config.json from a directory", async () => {
    const loaded = await loadTokenizer(await writeTokenizerDir());
    expect(loaded.encode("Hello, world!")).toEqual(tokenizer.encode("Hello, world!"));
    expect(loaded.applyChatTemplate([{ role: "user", content: "x" }])).toBe(
      "<|im_start|>user\nx<|im_end|>\n",
    );
  });

  test("a missing tokenizer.json is an error naming it", async () => {
    const dir = await writeTokenizerDir();
    await rm(join(dir, "tokenizer.json"));
    await expect(loadTokenizer(dir)).rejects.toThrow(`${join(dir, "tokenizer.json")}: not found`);
  });

  test("a missing tokenizer_config.json is an error naming it", async () => {
    const dir = await writeTokenizerDir();
    await rm(join(dir, "tokenizer_config.json"));
    await expect(loadTokenizer(dir)).rejects.toThrow(`${join(dir, "tokenizer_config.json")}: not found`);
  });

  test("a tokenizer.json without a model is an error naming the file", async () => {
    const dir = await writeTokenizerDir({ added_tokens: [] });
    await expect(loadTokenizer(dir)).rejects.toThrow(`${join(dir, "tokenizer.json")}: model: is missing`);
  });

  test("chat_template.jinja is used when tokenizer_config.json has no template", async () => {
    const { chat_template: _, ...config } = files.tokenizerConfig;
    const dir = await writeTokenizerDir(files.tokenizerJson, config);
    await writeFile(join(dir, "chat_template.jinja"), "{% for m in messages %}[{{ m.role }}]{% endfor %}");
    const loaded = await loadTokenizer(dir);
    expect(loaded.applyChatTemplate([{ role: "user", content: "x" }])).toBe("[user]");
  });
});
