import type { ChatMessage, Transcript } from '../transcript.js';
import type { CreditSettings } from './credit.js';

/** What one assistant turn did: the trainer credits the turn from these (its `credit` estimators). */
export interface TrainerTurn {
  /** The turn's position in its dialogue, from 0. */
  index: number;
  /** The emotion change the turn caused (0 for an unanalysed turn). */
  emotion_change: number;
  /** The emotion the dialogue ended at. */
  final_emotion: number;
}

/** One optimizer sample: an assistant turn's exact prompt and raw completion, with its dialogue's reward. */
export interface TrainerSample {
  prompt: ChatMessage[];
  completion: string;
  /** The dialogue's reward; the trainer turns it into what the turn is trained on (the step's credit). */
  reward: number;
  group: string;
  /** The dialogue the turn belongs to: the trainer credits its turns together. */
  trajectory: string;
  turn?: TrainerTurn;
  /** The ids the policy sampled for `completion`: the trainer trains on exactly these; absent = re-tokenise. */
  completion_ids?: number[];
  /** The sampler's log-probability of each id, compared with the trainer's before the update. */
  completion_logprobs?: number[];
}

/**
 * Every assistant turn of a dialogue becomes a sample, with the dialogue's reward and the emotion
 * change the turn caused: the trainer shares the reward out over the turns under the step's credit.
 * The completion is the raw output, thinking included: that is what the policy produced; later
 * prompts hold only replies, as during the rollout.
 */
export function samplesFromTranscript(transcript: Transcript, group: string): TrainerSample[] {
  return transcript.turns.map((turn, i) => ({
    prompt: turn.promptMessages,
    completion: turn.policy.raw,
    reward: transcript.reward,
    group,
    trajectory: transcript.rolloutId,
    ...turnOf(transcript, i),
    ...(turn.policy.tokens === 'sampled' && turn.policy.tokenIds
      ? {
          completion_ids: turn.policy.tokenIds,
          ...(turn.policy.logprobs ? { completion_logprobs: turn.policy.logprobs } : {}),
        }
      : {}),
  }));
}

/** The turn's outcome; none where the transcript lacks an emotion (then only `final` credit can train it). */
function turnOf(transcript: Transcript, index: number): { turn?: TrainerTurn } {
  const turn = transcript.turns[index]!;
  const change = turn.emotionAfter - turn.emotionBefore;
  if (!Number.isFinite(change) || !Number.isFinite(transcript.finalEmotion)) return {};
  return { turn: { index, emotion_change: change, final_emotion: transcript.finalEmotion } };
}

/** The step's credit settings as the trainer's `StepRequest.credit` names them. */
export function trainerCredit(credit: CreditSettings): { mode: string; turn_discount: number; weight: number } {
  return { mode: credit.mode, turn_discount: credit.turnDiscount, weight: credit.weight };
}
