import type { StepMetricsRecord } from '../runMetrics.js';
import type { TrainingSettings } from '../training/trainingSettingsSchema.js';
import { dialogueSettingsOf } from '../dialogueKeys.js';
import { rewardEnvironment } from '../evaluationManifest.js';

/** A step's scalar metrics under the names every tracker gets (`reward/mean`, `trainer/loss`, `eval/score`). */
export function stepScalars(record: StepMetricsRecord): Record<string, number> {
  const out: Record<string, number> = {
    'reward/mean': record.reward.mean,
    'reward/std': record.reward.std,
    'reward/min': record.reward.min,
    'reward/max': record.reward.max,
    'rollouts/ok': record.rollouts.ok,
    'rollouts/failed': record.rollouts.failed,
    'rollouts/dropped': record.rollouts.dropped,
    'rate/success': record.successRate,
    'rate/failure': record.failureRate,
    'rate/malformed': record.malformedRate,
    'dialogue/turns': record.meanTurns,
  };
  for (const [key, value] of Object.entries(record.trainer)) out[`trainer/${key}`] = value;
  if (typeof record.publishLatencyMs === 'number') out['publish/latency_ms'] = record.publishLatencyMs;
  for (const [name, stats] of [
    ['turn_reward', record.turnReward],
    ['turn_return', record.turnReturn],
  ] as const)
    if (stats) for (const [key, value] of Object.entries(stats)) out[`${name}/${key}`] = value;
  for (const [key, value] of Object.entries(record.signals ?? {})) out[`signals/${key}`] = value;
  // A guardrail's warning reaches the trackers as a count per step (its message is in the record).
  if (record.guardrails) out['guardrails/tripped'] = record.guardrails.length;
  if (record.eval) {
    out['eval/score'] = record.eval.score;
    out['eval/success'] = record.eval.success;
    out['eval/failure'] = record.eval.failure;
    out['eval/count'] = record.eval.count;
  }
  for (const c of record.capability ?? []) {
    if (c.score !== null) out[`capability/${c.suite}/score`] = c.score;
    if (c.ci) [out[`capability/${c.suite}/low`], out[`capability/${c.suite}/high`]] = [c.ci.low, c.ci.high];
    out[`capability/${c.suite}/count`] = c.count;
  }
  // A tracker would reject or misdraw NaN and infinities: such values are left out, not faked.
  return Object.fromEntries(Object.entries(out).filter(([, v]) => typeof v === 'number' && Number.isFinite(v)));
}

/** Nested config as flat `a.b.c` string parameters (arrays as JSON), the form trackers take. */
export function flatParams(value: unknown, prefix = '', out: Record<string, string> = {}): Record<string, string> {
  if (value === undefined) return out;
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) flatParams(child, prefix ? `${prefix}.${key}` : key, out);
    return out;
  }
  out[prefix] = typeof value === 'string' ? value : JSON.stringify(value);
  return out;
}

/** Longer values (system prompts) are left out of the params: trackers cap a param's length. */
const MAX_PARAM_CHARS = 500;

/** A run's params for the trackers: the training config that shapes it, without prompts or endpoints' internals. */
export function trackedParams(settings: TrainingSettings): Record<string, string> {
  const { rollout } = settings;
  const params = flatParams({
    algorithm: settings.algorithm,
    steps: settings.steps,
    scenariosPerStep: settings.scenariosPerStep,
    samplesPerScenario: settings.samplesPerScenario,
    seed: settings.seed,
    maxInFlight: settings.maxInFlight,
    maxFailedShare: settings.maxFailedShare,
    evalEvery: settings.evalEvery,
    ...(settings.credit ? { credit: settings.credit } : {}),
    // The phases as one JSON param: the training dialogues' levels (the environment names the evaluations').
    ...(settings.difficultyMix ? { difficultyMix: settings.difficultyMix } : {}),
    trainer: {
      baseModel: settings.trainer.baseModel,
      lora: settings.trainer.lora,
      hyperparameters: settings.trainer.hyperparameters,
    },
    publish: { mode: settings.publish.mode, baseVersion: settings.publish.baseVersion },
    rollout: {
      ...dialogueSettingsOf(rollout),
      llmCalls: rollout.llmCalls,
      activityPer: rollout.activityPer,
      policy: {
        temperature: rollout.policy.temperature,
        topP: rollout.policy.topP,
        maxTokens: rollout.policy.maxTokens,
      },
      simulator: { model: rollout.simulator.model, temperature: rollout.simulator.temperature },
    },
    // What the rewards are measured in, as evaluations' manifests and every step's record name it.
    environment: rewardEnvironment(rollout),
  });
  return Object.fromEntries(Object.entries(params).filter(([, v]) => v.length <= MAX_PARAM_CHARS));
}
