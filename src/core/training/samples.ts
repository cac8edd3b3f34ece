import type { ChatMessage, Transcript } from '../transcript.js';
import { creditedRewards, FINAL_CREDIT, type CreditSettings } from './credit.js';

/** One optimizer sample: an assistant turn's exact prompt and raw completion, with its credited reward. */
export interface TrainerSample {
  prompt: ChatMessage[];
  completion: string;
  reward: number;
  group: string;
  /**
   * The dialogue the turn belongs to, so group statistics count dialogues, not turns; '' with
   * credit by turn, where each turn has its own return and GRPO normalises over all turns of the group.
   */
  trajectory: string;
  /** The ids the policy sampled for `completion`: the trainer trains on exactly these; absent = re-tokenise. */
  completion_ids?: number[];
  /** The sampler's log-probability of each id, compared with the trainer's before the update. */
  completion_logprobs?: number[];
}

/**
 * Every assistant turn of a dialogue becomes a sample. With `final` credit they share the
 * dialogue's reward (RLVER gives the final emotion to the whole dialogue); with `turn` or `mixed`
 * each carries its own return (credit.ts). The completion is the raw output, thinking included:
 * that is what the policy produced; later prompts hold only replies, as during the rollout.
 */
export function samplesFromTranscript(
  transcript: Transcript,
  group: string,
  credit: CreditSettings = FINAL_CREDIT,
): TrainerSample[] {
  const rewards = creditedRewards(
    {
      changes: transcript.turns.map((t) => t.emotionAfter - t.emotionBefore),
      reward: transcript.reward,
      finalEmotion: transcript.finalEmotion,
    },
    credit,
  );
  return transcript.turns.map((turn, i) => ({
    prompt: turn.promptMessages,
    completion: turn.policy.raw,
    reward: rewards[i]!,
    group,
    trajectory: credit.mode === 'final' ? transcript.rolloutId : '',
    ...(turn.policy.tokens === 'sampled' && turn.policy.tokenIds
      ? {
          completion_ids: turn.policy.tokenIds,
          ...(turn.policy.logprobs ? { completion_logprobs: turn.policy.logprobs } : {}),
        }
      : {}),
  }));
}
