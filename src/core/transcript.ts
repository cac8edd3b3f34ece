import type { Analysis } from './analysis.js';
import type { SimulatorDifficulty } from './difficulty.js';
import type { EmotionState } from './emotion.js';
import type { GoalType, Personality, Scenario } from './scenario.js';
import type { Outcome } from './termination.js';

export interface TokenUsage {
  prompt: number;
  completion: number;
  /** Milliseconds the call waited for its endpoint's tokens-per-minute budget; absent when it did not wait. */
  rateLimitWaitMs?: number;
}

/** How often and how long one endpoint's calls waited for its tokens-per-minute budget. */
export interface RateLimitWaits {
  waits: number;
  waitMs: number;
}

export interface EndpointWaits {
  policy: RateLimitWaits;
  simulator: RateLimitWaits;
}

export interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

export interface PolicyTurnResult {
  raw: string;
  reply: string;
  thinking: string | null;
  malformed: boolean;
  problem?: string;
  model: string;
  /** Full fine-tuning on vLLM: the weight version that served the reply (`model` is then the served model's name). */
  weightVersion?: string;
  latencyMs: number;
  usage: TokenUsage;
  /**
   * `sampled`: `tokenIds` and `logprobs` are what the endpoint sampled for `raw`, and the trainer
   * trains on them; `retokenized`: the endpoint gave none, the trainer tokenises `raw`. Absent in
   * transcripts written before the marker existed (re-tokenised).
   */
  tokens?: 'sampled' | 'retokenized';
  tokenIds?: number[];
  /** The sampler's log-probability of each of `tokenIds`. */
  logprobs?: number[];
}

export interface AnalysisResult {
  analysis: Analysis;
  /** The simulator's text as received, kept so an operator can audit the score. */
  raw: string;
  attempts: number;
  latencyMs: number;
  usage: TokenUsage;
}

export interface UserMessageResult {
  text: string;
  latencyMs: number;
  usage: TokenUsage;
}

export interface TranscriptTurn {
  turn: number;
  /** The user's message the assistant answered in this turn. */
  userMessage: string;
  /** The exact prompt the policy saw: what a trainer sample is built from. */
  promptMessages: ChatMessage[];
  policy: PolicyTurnResult;
  analysis: AnalysisResult | null;
  emotionBefore: number;
  emotionAfter: number;
  state: EmotionState;
  userReply: UserMessageResult | null;
}

export interface TokenTotals {
  policyPrompt: number;
  policyCompletion: number;
  simulatorPrompt: number;
  simulatorCompletion: number;
  /** Present once a call of the dialogue waited for a tokens-per-minute budget. */
  rateLimitWaits?: EndpointWaits;
}

export interface Transcript {
  kind: 'attune.rollout';
  version: 1;
  rolloutId: string;
  runName: string | null;
  step: number | null;
  scenario: Scenario;
  policyModel: string;
  simulatorModel: string;
  /** The simulated user's level in this dialogue (the scenario's own, else the settings'); absent in older transcripts: normal. */
  difficulty?: SimulatorDifficulty;
  think: boolean;
  seed: number;
  initialEmotion: number;
  maxTurns: number;
  opening: { text: string; writtenBySimulator: boolean; latencyMs: number; usage: TokenUsage };
  turns: TranscriptTurn[];
  outcome: Outcome;
  finalEmotion: number;
  reward: number;
  tokens: TokenTotals;
  startedAt: string;
  finishedAt: string;
}

/** What a rollout returns to its parent: small, the transcript stays in the artifact store. */
export interface RolloutSummary {
  rolloutId: string;
  runName: string | null;
  step: number | null;
  scenarioId: string;
  goalType: GoalType;
  personality: Personality;
  policyModel: string;
  outcome: Outcome;
  finalEmotion: number;
  reward: number;
  turns: number;
  /** Initial emotion, then the emotion after each analysed turn. */
  emotions: number[];
  tokens: TokenTotals;
  artifact: string;
  /** The scenario's content as the dialogue loaded it (scenarioHash.ts); absent in older summaries. */
  scenarioHash?: string;
}

export function emptyTotals(): TokenTotals {
  return { policyPrompt: 0, policyCompletion: 0, simulatorPrompt: 0, simulatorCompletion: 0 };
}

export function noWaits(): EndpointWaits {
  return { policy: { waits: 0, waitMs: 0 }, simulator: { waits: 0, waitMs: 0 } };
}

/** A call that waited for its budget counts once, with its wait; the field appears with the first wait. */
export function addRateLimitWait(tokens: TokenTotals, endpoint: keyof EndpointWaits, usage: TokenUsage): void {
  if (!usage.rateLimitWaitMs) return;
  tokens.rateLimitWaits ??= noWaits();
  tokens.rateLimitWaits[endpoint].waits += 1;
  tokens.rateLimitWaits[endpoint].waitMs += usage.rateLimitWaitMs;
}

/** Token totals grow by what one turn's calls used. */
export function addTurnUsage(tokens: TokenTotals, turn: TranscriptTurn): void {
  tokens.policyPrompt += turn.policy.usage.prompt;
  tokens.policyCompletion += turn.policy.usage.completion;
  addRateLimitWait(tokens, 'policy', turn.policy.usage);
  for (const call of [turn.analysis, turn.userReply]) {
    if (!call) continue;
    tokens.simulatorPrompt += call.usage.prompt;
    tokens.simulatorCompletion += call.usage.completion;
    addRateLimitWait(tokens, 'simulator', call.usage);
  }
}

/** The waits of several dialogues together; null when none waited. */
export function sumRateLimitWaits(all: readonly (EndpointWaits | undefined)[]): EndpointWaits | null {
  const present = all.filter((w): w is EndpointWaits => w !== undefined);
  if (present.length === 0) return null;
  const total = noWaits();
  for (const w of present)
    for (const endpoint of ['policy', 'simulator'] as const) {
      total[endpoint].waits += w[endpoint].waits;
      total[endpoint].waitMs += w[endpoint].waitMs;
    }
  return total;
}
