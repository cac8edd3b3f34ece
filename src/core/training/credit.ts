/**
 * How a dialogue's reward is shared out over its assistant turns (`training.credit`):
 * - `final`: every turn gets the dialogue's reward (RLVER: the final emotion / 100);
 * - `turn`: each turn is rewarded with the emotion change it caused (/ 100), and trained on its
 *   return, the sum of its own and later turns' rewards discounted by `turnDiscount` per turn;
 * - `mixed`: `weight` x the turn return + (1 - weight) x the dialogue's reward.
 *
 * The trainer credits the samples it trains on (trainer/src/attune_trainer/update/credit.py): the
 * optimizer sends each turn's emotion change and these settings. The functions below give the same
 * figures for the step record's statistics; one recorded fixture holds both sides to them.
 */
export const CREDIT_MODES = ['final', 'turn', 'mixed'] as const;
export type CreditMode = (typeof CREDIT_MODES)[number];

/** See creditSchema.ts. */
export interface CreditSettings {
  mode: CreditMode;
  turnDiscount: number;
  weight: number;
}

/** Runs started before credit existed, and the default: RLVER's one reward per dialogue. */
export const FINAL_CREDIT: CreditSettings = { mode: 'final', turnDiscount: 1, weight: 0.5 };

/** What a dialogue's per-turn credit is computed from (a transcript or a rollout's summary). */
export interface DialogueCreditInput {
  /** The emotion change each assistant turn caused, in turn order (0 for an unanalysed turn). */
  changes: readonly number[];
  /** The dialogue's reward (rewardFor: final emotion / 100, 0 when malformed). */
  reward: number;
  finalEmotion: number;
}

/**
 * Each assistant turn's own reward: its emotion change / 100. The last turn also carries the
 * terminal part, reward - finalEmotion / 100: 0 normally, and for a malformed ending the loss of
 * everything the dialogue had, so the turn that broke the format is the one that pays for it.
 * With no discount the rewards sum to reward - initialEmotion / 100.
 */
export function turnRewards({ changes, reward, finalEmotion }: DialogueCreditInput): number[] {
  const rewards = changes.map((c) => c / 100);
  if (rewards.length > 0) rewards[rewards.length - 1]! += reward - finalEmotion / 100;
  return rewards;
}

/** G_t = r_t + discount x G_(t+1): each turn's discounted sum of rewards from it to the end. */
export function discountedReturns(rewards: readonly number[], discount: number): number[] {
  const returns = new Array<number>(rewards.length);
  let next = 0;
  for (let t = rewards.length - 1; t >= 0; t--) {
    next = rewards[t]! + discount * next;
    returns[t] = next;
  }
  return returns;
}

/** The reward each turn's sample is trained on under `credit`, in turn order. */
export function creditedRewards(input: DialogueCreditInput, credit: CreditSettings): number[] {
  if (credit.mode === 'final') return input.changes.map(() => input.reward);
  const returns = discountedReturns(turnRewards(input), credit.turnDiscount);
  if (credit.mode === 'turn') return returns;
  return returns.map((g) => credit.weight * g + (1 - credit.weight) * input.reward);
}

/**
 * The per-turn emotion changes of a rollout summary: `emotions` holds the initial emotion and the
 * emotion after each analysed turn; only a malformed last turn goes unanalysed (change 0).
 */
export function changesFromEmotions(emotions: readonly number[], turns: number): number[] {
  const changes = emotions.slice(1).map((e, i) => e - emotions[i]!);
  while (changes.length < turns) changes.push(0);
  return changes.slice(0, turns);
}
