// @opentinker/tokenizer: Hugging Face tokenizers and chat templates, with no native
// code, so that remote SDK clients tokenize exactly as the engine does.
export * from "./chat-prompt.ts";
export * from "./json-files.ts";
export * from "./tokenizer.ts";
