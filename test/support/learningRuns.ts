import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { startRuleBasedUser, type RuleBasedTask } from '../../src/ruleuser/server.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from './trainingRig.js';

/** The learnable task's initial emotion: the rule-based user's best reward is 0.7 in two turns. */
export const LEARNING_INITIAL_EMOTION = 50;

/** The learnable task: the trainer's tiny model against the rule-based user (shorter replies raise the emotion). */
export function learningSet(algorithm: 'grpo' | 'ppo', steps: number): string[] {
  return [
    ...TINY_TRAINING(algorithm, steps),
    // Eight dialogues a step either way: GRPO compares four samples of each of two scenarios.
    algorithm === 'grpo' ? 'training.samplesPerScenario=4' : 'training.scenariosPerStep=8',
    'training.dialogue.maxTurns=2',
    `training.dialogue.initialEmotion=${LEARNING_INITIAL_EMOTION}`,
    'training.hyperparameters.learning_rate=0.02',
    'policy.maxTokens=16',
    'simulator.model=rule-based-user',
  ];
}

/** Mean of the first and of the last `k` steps' mean rewards. */
export function rewardRise(metrics: StepMetricsRecord[], k = 3): { first: number; last: number } {
  const mean = (xs: StepMetricsRecord[]) => xs.reduce((a, m) => a + m.reward.mean, 0) / xs.length;
  return { first: mean(metrics.slice(0, k)), last: mean(metrics.slice(-k)) };
}

/**
 * One run of the learnable task through Temporal and the trainer; its step metrics. `simulatorURL`
 * replaces the rule-based user (e.g. with a local model server), `task` picks its rule; `extra` settings go last.
 */
export async function learningRun(
  algorithm: 'grpo' | 'ppo',
  steps: number,
  runName: string,
  options: {
    simulatorURL?: string;
    task?: RuleBasedTask;
    extra?: string[];
    /** The trainer's state directory (default: a new one), e.g. one with a converted model in place. */
    trainerStateDir?: string;
    finished?: (rig: TrainingRig) => Promise<void>;
  } = {},
): Promise<StepMetricsRecord[]> {
  const user = options.simulatorURL ? null : await startRuleBasedUser(options.task ? { task: options.task } : {});
  const simulator = options.simulatorURL ?? user!.url;
  const rig = await createTrainingRig({
    ...(options.trainerStateDir ? { trainerStateDir: options.trainerStateDir } : {}),
    set: [...learningSet(algorithm, steps), `simulator.baseURL=${simulator}`, ...(options.extra ?? [])],
  });
  try {
    await rig.startWorkers();
    const { handle } = await rig.start(runName);
    await handle.result();
    await options.finished?.(rig);
    return await rig.metrics(runName);
  } finally {
    await rig.close();
    await user?.close();
  }
}
