/**
 * The four ways a rollout can run its LLM calls, as config overrides. The default (src/config/schema.ts)
 * is `localTurn`; a test about one mode names it, so the test keeps its subject whichever mode is the default.
 */
export const ROLLOUT_MODES = {
  /** Each LLM call an activity on its endpoint's task queue. */
  perCall: ['rollout.llmCalls=activity', 'rollout.activityPer=call'],
  /** Each LLM call a local activity in the rollout worker (a crash repeats the calls since the last workflow task). */
  localPerCall: ['rollout.llmCalls=local', 'rollout.activityPer=call'],
  /** Each turn an activity on the turns queue, its finished calls carried by heartbeats. */
  turnActivity: ['rollout.llmCalls=activity', 'rollout.activityPer=turn'],
  /** Each turn a local activity, its finished calls in the turn journal. */
  localTurn: ['rollout.llmCalls=local', 'rollout.activityPer=turn'],
} as const;
