import type { ChatMessage, Transcript } from '../transcript.js';

/** One optimizer sample: an assistant turn's exact prompt and raw completion, with the dialogue's reward. */
export interface TrainerSample {
  prompt: ChatMessage[];
  completion: string;
  reward: number;
  group: string;
  /** The dialogue the turn belongs to, so group statistics count dialogues, not turns. */
  trajectory: string;
  /** The ids the policy sampled for `completion`: the trainer trains on exactly these; absent = re-tokenise. */
  completion_ids?: number[];
  /** The sampler's log-probability of each id, compared with the trainer's before the update. */
  completion_logprobs?: number[];
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
    ...(turn.policy.tokens === 'sampled' && turn.policy.tokenIds
      ? {
          completion_ids: turn.policy.tokenIds,
          ...(turn.policy.logprobs ? { completion_logprobs: turn.policy.logprobs } : {}),
        }
      : {}),
  }));
}
