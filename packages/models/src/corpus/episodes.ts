// Scripted episodes → training sequences. A scripted player drives an
// environment through its own Env interface, so every prompt and every piece of
// feedback is rendered by the environment exactly as it will be during RL; only
// the player's action tokens carry weight (C6, C7).
import { type ModelInput, modelInputTokens } from "@opentinker/protocol";
import type { Env, RendererTokenizer } from "@opentinker/sdk";

/** One training sequence: tokens and a weight per token (1 on actions, 0 on context). */
export interface Example {
  tokens: number[];
  weights: number[];
  /**
   * The sequence as a model input, when it holds images (vision-language
   * corpora); `tokens` then has one id per position, a placeholder at image positions.
   */
  input?: ModelInput;
}

/** The player's action tokens for this turn (it may keep its own state between turns). */
export type ScriptedPlayer = (turn: number) => number[];

/** A scripted player's reply as the model writes it: the text's tokens, then <|im_end|>. */
export function replyEncoder(tokenizer: RendererTokenizer): (text: string) => number[] {
  const end = tokenizer.tokenId("<|im_end|>");
  if (end === undefined) throw new Error("the tokenizer has no <|im_end|> token");
  return (text) => [...tokenizer.encode(text, { addSpecialTokens: false }), end];
}

/**
 * `count` episodes played one after another: `next` sets up each (its env and
 * player, who replies through `reply`) when the last is done.
 */
export async function scriptedEpisodes(
  tokenizer: RendererTokenizer,
  count: number,
  next: (reply: (text: string) => number[]) => { env: Env; player: ScriptedPlayer },
): Promise<Example[]> {
  const reply = replyEncoder(tokenizer);
  const out: Example[] = [];
  for (let i = 0; i < count; i++) {
    const { env, player } = next(reply);
    out.push(...(await scriptedEpisode(env, player)));
  }
  return out;
}

const startsWith = (tokens: readonly number[], prefix: readonly number[]) =>
  prefix.length <= tokens.length && prefix.every((t, i) => tokens[i] === t);

/**
 * Plays one episode. Turns whose observation extends the previous context
 * (multi-turn chat) join one sequence; an observation that starts afresh begins
 * a new one.
 */
export async function scriptedEpisode(env: Env, player: ScriptedPlayer, maxTurns = 32): Promise<Example[]> {
  const examples: Example[] = [];
  let current: Example = { tokens: [], weights: [] };
  let { observation } = await env.initialObservation();
  for (let turn = 0; turn < maxTurns; turn++) {
    const context = modelInputTokens(observation);
    if (!startsWith(context, current.tokens)) {
      if (current.tokens.length > 0) examples.push(current);
      current = { tokens: [], weights: [] };
    }
    for (const token of context.slice(current.tokens.length)) {
      current.tokens.push(token);
      current.weights.push(0);
    }
    const action = player(turn);
    for (const token of action) {
      current.tokens.push(token);
      current.weights.push(1);
    }
    const result = await env.step(action);
    if (result.done) {
      examples.push(current);
      return examples;
    }
    if (!result.nextObservation) throw new Error("scriptedEpisode: the environment gave no next observation");
    observation = result.nextObservation;
  }
  throw new Error(`scriptedEpisode: the episode did not end within ${maxTurns} turns`);
}
