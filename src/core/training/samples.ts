import type { ChatMessage, Transcript } from '../transcript.js';

/** One optimizer sample: an assistant turn's exact prompt and raw completion, with the dialogue's reward. */
export interface TrainerSample {
  prompt: ChatMessage[];
  completion: string;
  reward: number;
  group: string;
  /** The dialogue the turn belongs to, so group statistics count dialogues, not turns. */
  trajectory: string;
}

/**
 * Every assistant turn of a dialogue becomes a sample sharing the dialogue's reward (RLVER gives
 * the final emotion to the whole dialogue). The completion is the raw output, thinking included:
 * that is what the policy produced; later prompts hold only replies, as during the rollout.
 */
export function samplesFromTranscript(transcript: Transcript, group: string): TrainerSample[] {
  return transcript.turns.map((turn) => ({
    prompt: turn.promptMessages,
    completion: turn.policy.raw,
    reward: transcript.reward,
    group,
    trajectory: transcript.rolloutId,
  }));
}
