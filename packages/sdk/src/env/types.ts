// Environments (DESIGN.md C7, C8): single use, reset by construction. The
// observation is the whole model input for the next generation; the environment
// (through its renderer) decides how the context grows between turns.
import type { ModelInput } from "@opentinker/protocol";

export interface StopCondition {
  /** Stop strings or token ids for this turn's generation. */
  stop: string[] | number[];
  maxTokens: number;
}

export interface StepResult {
  reward: number;
  done: boolean;
  /** Required unless done: the next model input (typically the old one + action + observation). */
  nextObservation?: ModelInput;
  nextStop?: StopCondition;
  metrics?: Record<string, number>;
}

export interface Env {
  initialObservation(): Promise<{ observation: ModelInput; stop: StopCondition }>;
  /** Called with exactly the tokens the model generated this turn. */
  step(action: number[]): Promise<StepResult>;
}

/** The environments of one group (GRPO: one task, many attempts). */
export interface EnvGroupBuilder {
  makeEnvs(): Promise<Env[]>;
  /** For metrics: which kind of task this is. */
  tag?: string;
}

/** Batches of groups for training or validation. */
export interface RlDataset {
  readonly batches: number;
  batch(index: number): EnvGroupBuilder[];
}
