import {
  allHandlersFinished,
  condition,
  continueAsNew,
  defineQuery,
  defineUpdate,
  executeChild,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { OptimizerQueueActivities, RolloutQueueActivities } from '../activities/index.js';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import { stableHash } from '../core/seeds.js';
import { keepGroups, type StepRollout } from '../core/training/groups.js';
import { scenariosForStep } from '../core/training/scenarioSchedule.js';
import { parseLiveSet, type LiveSettings } from '../core/training/liveSet.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { RolloutSummary } from '../core/transcript.js';
import { LIMITS } from '../config/limits.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { evaluation } from './evaluation.js';
import { boundedFanOut, failureMessage } from './fanOut.js';
import { rollout } from './rollout.js';

export type TrainingPhase =
  | 'starting'
  | 'rollouts'
  | 'waiting-for-operator'
  | 'paused'
  | 'optimizing'
  | 'publishing'
  | 'evaluating'
  | 'recording'
  | 'done'
  | 'stopped';

/** Small state carried across continue-as-new: never transcripts. */
export interface TrainingState {
  /** Next step to run (1-based). */
  step: number;
  /** Policy version the next step samples from. */
  version: string;
  initialized: boolean;
  paused: boolean;
  stopRequested: boolean;
  live: LiveSettings;
  /** Durations of recent steps, for the ETA. */
  stepDurationsMs: number[];
  lastMetrics: StepMetricsRecord | null;
}

export interface TrainingInput {
  settings: TrainingSettings;
  state?: TrainingState;
}

export interface TrainingStatus {
  runName: string;
  algorithm: 'grpo' | 'ppo';
  step: number;
  steps: number;
  phase: TrainingPhase;
  paused: boolean;
  stopRequested: boolean;
  version: string;
  rollouts: { total: number; done: number; failed: number; inFlight: number };
  blockedReason: string | null;
  lastMetrics: StepMetricsRecord | null;
  etaMs: number | null;
  live: LiveSettings;
}

export interface TrainingResult {
  runName: string;
  stepsApplied: number;
  stopped: boolean;
  version: string;
  lastMetrics: StepMetricsRecord | null;
}

export const trainingStatusQuery = defineQuery<TrainingStatus>('trainingStatus');
export const pauseUpdate = defineUpdate<TrainingStatus>('pause');
export const resumeUpdate = defineUpdate<TrainingStatus>('resume');
export const stopUpdate = defineUpdate<TrainingStatus>('stop');
export const setUpdate = defineUpdate<LiveSettings, [Record<string, unknown>]>('set');

export function trainingWorkflowId(runName: string): string {
  return `train-${runName}`;
}

function mean(values: number[]): number {
  return values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length;
}

function stats(values: number[]) {
  const m = mean(values);
  const std = Math.sqrt(mean(values.map((v) => (v - m) ** 2)));
  return { mean: m, std, min: values.length ? Math.min(...values) : 0, max: values.length ? Math.max(...values) : 0 };
}

/**
 * An RLVER run: each step samples scenarios from (seed, step), runs their dialogues as child
 * workflows (bounded), sends them to the optimizer (exactly once, keyed by run and step),
 * publishes the new weights, records metrics, then continues as new with a small state.
 */
export async function training(input: TrainingInput): Promise<TrainingResult> {
  const settings = input.settings;
  const state: TrainingState = input.state ?? {
    step: 1,
    version: settings.publish.baseVersion,
    initialized: false,
    paused: false,
    stopRequested: false,
    live: {},
    stepDurationsMs: [],
    lastMetrics: null,
  };
  const steps = () => state.live.steps ?? settings.steps;
  const maxInFlight = () => state.live.maxInFlight ?? settings.maxInFlight;
  const maxFailedShare = () => state.live.maxFailedShare ?? settings.maxFailedShare;
  const evalEvery = () => state.live.evalEvery ?? settings.evalEvery;

  const local = proxyActivities<RolloutQueueActivities>({
    taskQueue: settings.rollout.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    // No attempt limit (omitted): local bookkeeping outlives any transient failure.
    retry: { maximumInterval: '1 minute' },
  });
  const optimizer = proxyActivities<OptimizerQueueActivities>({
    taskQueue: settings.trainer.optimizerTaskQueue,
    startToCloseTimeout: settings.trainer.stepTimeoutMs,
    heartbeatTimeout: settings.trainer.heartbeatTimeoutMs,
    // The trainer may be restarting: keep asking; its exactly-once contract makes that safe.
    retry: {
      initialInterval: '2 seconds',
      maximumInterval: '1 minute',
      nonRetryableErrorTypes: ['TrainerRejected', 'TrainerStepConflict', 'EmptyStep', 'TrainerBadResponse'],
    },
  });

  let phase: TrainingPhase = 'starting';
  let blockedReason: string | null = null;
  let resumeRequested = false;
  const progress = { total: 0, done: 0, failed: 0, inFlight: 0 };
  const status = (): TrainingStatus => {
    const remaining = Math.max(0, steps() - state.step + (phase === 'done' || phase === 'stopped' ? 0 : 1));
    const perStep = state.stepDurationsMs.length > 0 ? mean(state.stepDurationsMs) : null;
    return {
      runName: settings.runName,
      algorithm: settings.algorithm,
      step: state.step,
      steps: steps(),
      phase,
      paused: state.paused,
      stopRequested: state.stopRequested,
      version: state.version,
      rollouts: { ...progress },
      blockedReason,
      lastMetrics: state.lastMetrics,
      etaMs: perStep === null ? null : Math.round(perStep * remaining),
      live: state.live,
    };
  };
  setHandler(trainingStatusQuery, status);
  setHandler(pauseUpdate, () => {
    state.paused = true;
    return status();
  });
  setHandler(resumeUpdate, () => {
    state.paused = false;
    resumeRequested = true;
    return status();
  });
  setHandler(stopUpdate, () => {
    state.stopRequested = true;
    return status();
  });
  setHandler(
    setUpdate,
    (pairs) => {
      state.live = { ...state.live, ...parseLiveSet(pairs) };
      return state.live;
    },
    {
      validator: (pairs) => {
        const change = parseLiveSet(pairs);
        if (change.steps !== undefined && change.steps < state.step - 1)
          throw new Error(`steps: ${change.steps} is below the ${state.step - 1} steps already applied`);
      },
    },
  );

  const setPhase = (next: TrainingPhase) => {
    phase = next;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: next }]);
  };
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'training' },
    { key: SEARCH_ATTRIBUTES.runName, value: settings.runName },
    { key: SEARCH_ATTRIBUTES.step, value: state.step - 1 },
  ]);

  const finish = (stopped: boolean): TrainingResult => {
    setPhase(stopped ? 'stopped' : 'done');
    return {
      runName: settings.runName,
      stepsApplied: state.step - 1,
      stopped,
      version: state.version,
      lastMetrics: state.lastMetrics,
    };
  };

  if (!state.initialized) {
    await optimizer.ensureTrainerRun({
      trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
      runName: settings.runName,
      algorithm: settings.algorithm,
      baseModel: settings.trainer.baseModel,
      lora: settings.trainer.lora,
      hyperparameters: settings.trainer.hyperparameters,
      seed: settings.seed,
    });
    state.initialized = true;
  }
  if (state.stopRequested || state.step > steps()) return finish(state.stopRequested);

  // Paused between steps: wait before starting the next one.
  if (state.paused) {
    setPhase('paused');
    await condition(() => !state.paused || state.stopRequested);
    if (state.stopRequested) return finish(true);
  }

  const step = state.step;
  const startedAt = Date.now();
  setPhase('rollouts');
  const ids = await local.listScenarioIds(settings.scenarioDir);
  const chosen = scenariosForStep(ids, settings.seed, step, settings.scenariosPerStep).ids;
  const temperature = state.live.temperature;
  const rolloutSettings = {
    ...settings.rollout,
    policy: { ...settings.rollout.policy, model: state.version, ...(temperature !== undefined ? { temperature } : {}) },
  };
  interface Planned {
    rolloutId: string;
    scenarioId: string;
    group: string;
    seed: number;
  }
  const planned: Planned[] = [];
  chosen.forEach((scenarioId, position) => {
    // The same scenario can appear twice in a step that spans an epoch boundary: position keeps groups apart.
    const group = `s${step}-${position}-${scenarioId}`;
    for (let k = 0; k < settings.samplesPerScenario; k++) {
      planned.push({
        rolloutId: `${settings.runName}--s${step}--${position}-${scenarioId}--k${k}`,
        scenarioId,
        group,
        seed: stableHash(`${settings.seed}:${step}:${position}:${k}`) % 2_147_483_647,
      });
    }
  });
  progress.total = planned.length;

  const results = new Map<string, RolloutSummary | null>();
  const errors = new Map<string, string>();
  const runRollouts = async (batch: Planned[], attempt: number) => {
    const outcomes = await boundedFanOut(batch, maxInFlight(), async (p) => {
      // Pause: in-flight dialogues finish; no new one starts until resumed.
      if (state.paused) await condition(() => !state.paused || state.stopRequested);
      progress.inFlight++;
      try {
        const summary = await executeChild(rollout, {
          ...rolloutStartOptions(rolloutSettings),
          workflowId: attempt === 0 ? p.rolloutId : `${p.rolloutId}--a${attempt}`,
          taskQueue: workflowInfo().taskQueue,
          args: [
            {
              rolloutId: attempt === 0 ? p.rolloutId : `${p.rolloutId}--a${attempt}`,
              scenarioRef: { dir: settings.scenarioDir, id: p.scenarioId },
              settings: rolloutSettings,
              seed: p.seed + attempt,
              runName: settings.runName,
              step,
            },
          ],
        });
        progress.done++;
        return summary;
      } catch (error) {
        progress.failed++;
        throw error;
      } finally {
        progress.inFlight--;
      }
    });
    outcomes.forEach((outcome, i) => {
      const p = batch[i]!;
      if (outcome.ok) {
        results.set(p.rolloutId, outcome.value);
        errors.delete(p.rolloutId);
      } else {
        results.set(p.rolloutId, null);
        errors.set(p.rolloutId, failureMessage(outcome.error));
      }
    });
    progress.done = [...results.values()].filter((r) => r !== null).length;
    progress.failed = errors.size;
  };
  await runRollouts(planned, 0);

  // Too many failures: wait for an operator (fix the endpoint, then `attune resume` retries the failed ones).
  for (let attempt = 1; errors.size / planned.length > maxFailedShare(); attempt++) {
    blockedReason = `${errors.size} of ${planned.length} rollouts failed (limit ${Math.round(maxFailedShare() * 100)}%); first error: ${[...errors.values()][0] ?? ''}`;
    setPhase('waiting-for-operator');
    resumeRequested = false;
    await condition(() => resumeRequested || state.stopRequested);
    if (state.stopRequested) return finish(true);
    blockedReason = null;
    setPhase('rollouts');
    await runRollouts(
      planned.filter((p) => errors.has(p.rolloutId)),
      attempt,
    );
  }

  const stepRollouts: StepRollout[] = planned.map((p) => ({
    rolloutId: p.rolloutId,
    scenarioId: p.scenarioId,
    group: p.group,
    ok: results.get(p.rolloutId) != null,
  }));
  const decision = keepGroups(stepRollouts, settings.algorithm === 'grpo' && settings.samplesPerScenario > 1 ? 2 : 1);
  const kept = decision.kept.map((r) => results.get(r.rolloutId)!);
  if (kept.length === 0) throw new Error(`step ${step}: no rollout survived (${decision.failed} failed)`);

  setPhase('optimizing');
  const liveHyper = Object.fromEntries(
    Object.entries(state.live).filter(([k]) =>
      ['learning_rate', 'clip_ratio', 'kl_coef', 'entropy_coef', 'value_learning_rate', 'max_grad_norm'].includes(k),
    ),
  );
  const applied = await optimizer.applyOptimizerStep({
    trainer: { url: settings.trainer.url, tokenEnv: settings.trainer.tokenEnv },
    runName: settings.runName,
    step,
    rollouts: decision.kept.map((r) => ({ artifact: results.get(r.rolloutId)!.artifact, group: r.group })),
    ...(Object.keys(liveHyper).length > 0 ? { hyperparameters: liveHyper } : {}),
    // Several beats per timeout, so one late beat does not fail a healthy step.
    heartbeatEveryMs: Math.max(500, Math.min(10_000, Math.floor(settings.trainer.heartbeatTimeoutMs / 4))),
  });

  setPhase('publishing');
  const version = settings.publish.mode === 'trainer' ? `${settings.runName}@${step}` : applied.version;
  await local.publishPolicyVersion({
    mode: settings.publish.mode,
    policyBaseURL: settings.publish.policyBaseURL,
    apiKeyEnv: settings.rollout.policy.apiKeyEnv,
    version,
    exportPath: applied.exportPath,
  });
  state.version = version;

  let evalSummary: StepMetricsRecord['eval'];
  if (
    evalEvery() > 0 &&
    (step % evalEvery() === 0 || step === steps()) &&
    settings.evalSettings &&
    settings.evalScenarios.length > 0
  ) {
    setPhase('evaluating');
    const evalId = `${settings.runName}-eval-s${step}`;
    try {
      const summary = await executeChild(evaluation, {
        workflowId: evalId,
        taskQueue: workflowInfo().taskQueue,
        args: [
          {
            evalId,
            scenarioDir: settings.evalScenarioDir,
            scenarios: settings.evalScenarios,
            source: 'eval split',
            settings: {
              ...settings.evalSettings,
              policy: { ...settings.evalSettings.policy, baseURL: settings.publish.policyBaseURL, model: version },
            },
            seed: settings.seed,
            concurrency: settings.evalConcurrency,
            runName: settings.runName,
            step,
          },
        ],
      });
      evalSummary = {
        evalId,
        score: summary.score,
        success: summary.success,
        failure: summary.failure,
        count: summary.count,
      };
    } catch (error) {
      // An evaluation failure is reported, not fatal to training.
      blockedReason = `evaluation ${evalId} failed: ${failureMessage(error)}`;
    }
  }

  setPhase('recording');
  const rewards = kept.map((s) => s.reward);
  const record: StepMetricsRecord = {
    kind: 'attune.step',
    run: settings.runName,
    step,
    algorithm: settings.algorithm,
    time: new Date().toISOString(),
    policyVersion: rolloutSettings.policy.model,
    rollouts: { ok: kept.length, failed: decision.failed, dropped: decision.dropped.length },
    reward: stats(rewards),
    successRate: kept.filter((s) => s.outcome === 'success').length / kept.length,
    failureRate: kept.filter((s) => s.outcome === 'failure').length / kept.length,
    malformedRate: kept.filter((s) => s.outcome === 'malformed').length / kept.length,
    meanTurns: mean(kept.map((s) => s.turns)),
    trainer: applied.metrics,
    ...(evalSummary ? { eval: evalSummary } : {}),
  };
  await local.recordStepMetrics(record);
  state.lastMetrics = record;
  state.stepDurationsMs = [...state.stepDurationsMs, Date.now() - startedAt].slice(-10);
  state.step = step + 1;
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.step, value: step },
    { key: SEARCH_ATTRIBUTES.meanReward, value: record.reward.mean },
  ]);

  if (state.stopRequested || state.step > steps()) return finish(state.stopRequested);
  // Let update handlers finish, then start the next step with a fresh history.
  await condition(allHandlersFinished);
  return continueAsNew<typeof training>({ settings, state });
}
