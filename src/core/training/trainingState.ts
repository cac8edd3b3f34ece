import type { Algorithm } from './algorithms.js';
import type { RolloutSettings } from '../rolloutSettingsSchema.js';
import type { StepMetricsRecord } from '../runMetrics.js';
import type { StepOutcomesSnapshot, StepRolloutResult } from './stepRollouts.js';
import { streamStatus, type DialogueStreamState, type DialogueStreamStatus } from './dialogueStream.js';
import type { LiveSettings } from './liveSet.js';
import type { OptimizedStep } from './optimizedStep.js';
import { mean } from '../statistics/valueStats.js';
import type { TrackingHealth } from '../tracking/trackingHealth.js';
import type { GuardState, GuardTrip } from './guardrails.js';
import type { WaitingCall } from '../outageWait.js';
import type { CapabilityBase } from '../capability/retention.js';

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
  /** A step whose rollouts were under way when the run continued as new (absent in older states). */
  stepInProgress?: StepInProgress | null;
  /**
   * With `maxStaleness` above 0: step `step`, whose rollouts are done and which the next run of the
   * workflow trains while the rollouts of the step after it run.
   */
  rolledOut?: RolledOutStep | null;
  /** The experiment trackers after the last step (absent without trackers). */
  tracking?: TrackingHealth[];
  /** The guardrails' view of recent steps (absent before the first recorded step, and in older states). */
  guard?: GuardState;
  /** The base policy's capability scores (`evalSuites`), each suite's once it was scored; absent without suites. */
  capabilityBase?: CapabilityBase[];
  /** Steps that take the first finished dialogues: the stream, carried from step to step. */
  stream?: CarriedStream;
}

/** The dialogue stream across continue-as-new: its bookkeeping, and the results of the dialogues waiting for a step. */
export interface CarriedStream {
  state: DialogueStreamState;
  /** By rollout id: each dialogue finished ok and not yet taken or dropped. */
  results: Record<string, StepRolloutResult>;
  /** The names of the versions dialogues that a step may still take sampled (the step's record names the oldest). */
  versionNames: Record<number, string>;
  /**
   * A step the optimizer applied and the run that applied it left to publish and record: the next
   * run publishes it while the optimizer trains the step after it (`publishesWhileOptimizing`).
   */
  optimized?: OptimizedStep;
  /**
   * Dialogues in flight that waited for an operator at a failed LLM call when the run continued as
   * new: the next run lists them in status, and `attune resume` continues them (absent: none).
   */
  waits?: WaitingCall[];
}

/**
 * The rollouts of a step carried across continue-as-new within the step: what the step samples
 * with, and what is done and what is left of its current attempt. Dialogues in flight finish
 * before the run continues, so none is started twice or lost.
 */
export interface StepInProgress {
  step: number;
  /** Epoch ms the step started, for its duration. */
  startedAt: number;
  /** The scenarios the step samples (the plan follows from them, see `plannedRolloutsOf`). */
  chosen: string[];
  rolloutSettings: RolloutSettings;
  /** The step whose weights the rollouts sample from (0: the base model; absent in older states: `step - 1`). */
  sampledFrom?: number;
  /** The attempt under way (0 first; later ones retry failed dialogues after `attune resume`). */
  attempt: number;
  /** Positions in the plan of the attempt's dialogues not started yet. */
  pending: number[];
  outcomes: StepOutcomesSnapshot;
}

/** A step whose dialogues are finished and not yet trained on: what the optimizer step needs. */
export interface RolledOutStep {
  step: number;
  /** Epoch ms the step's rollouts started. */
  startedAt: number;
  chosen: string[];
  /** The version name the rollouts sampled (`policy.model`). */
  policyVersion: string;
  /** The step whose weights that version holds (0: the base model). */
  sampledFrom: number;
  outcomes: StepOutcomesSnapshot;
}

export interface RolloutProgressCounts {
  total: number;
  done: number;
  failed: number;
  inFlight: number;
  /** In-flight dialogues waiting for an operator at a failed LLM call (absent: none reported). */
  waiting?: number;
}

export interface TrainingStatus {
  runName: string;
  algorithm: Algorithm;
  step: number;
  steps: number;
  phase: TrainingPhase;
  paused: boolean;
  stopRequested: boolean;
  version: string;
  rollouts: RolloutProgressCounts;
  blockedReason: string | null;
  lastMetrics: StepMetricsRecord | null;
  etaMs: number | null;
  live: LiveSettings;
  /** Trackers behind or down (absent without trackers). */
  tracking?: TrackingHealth[];
  /** Guardrail warnings of recent steps, and the trip the run waits on (absent before any tripped). */
  guardrails?: { warnings: GuardTrip[]; pausedBy: GuardTrip | null };
  /** Steps that take the first finished dialogues: the stream's counts (carried over, dropped, in flight). */
  stream?: DialogueStreamStatus;
  /**
   * A step the trainer applied whose publish, evaluation and record run beside the next step's
   * rollouts and optimizer step (`publishesWhileOptimizing`); absent when none does. `step` is that
   * step until it is recorded.
   */
  finishing?: FinishingStep;
}

/** A step being published and recorded beside the next one. */
export interface FinishingStep {
  step: number;
  /** The version its publish serves. */
  version: string;
}

export interface TrainingResult {
  runName: string;
  stepsApplied: number;
  stopped: boolean;
  version: string;
  lastMetrics: StepMetricsRecord | null;
}

/** How many recent step durations the ETA averages over. */
const ETA_WINDOW = 10;

export function initialTrainingState(baseVersion: string): TrainingState {
  return {
    step: 1,
    version: baseVersion,
    initialized: false,
    paused: false,
    stopRequested: false,
    live: {},
    stepDurationsMs: [],
    lastMetrics: null,
  };
}

/**
 * The state a run continues from after its workflow ended (failed, terminated, or finished with
 * fewer steps than now asked for): the step after the last one the trainer applied, sampling from
 * that step's version. Steps the trainer applied are never rolled out again.
 */
export function continuedTrainingState(runName: string, baseVersion: string, appliedSteps: number): TrainingState {
  return {
    ...initialTrainingState(appliedSteps > 0 ? `${runName}@${appliedSteps}` : baseVersion),
    step: appliedSteps + 1,
  };
}

/** The run ends before its next step: stopped by the operator, or every step applied. */
export function runIsOver(state: TrainingState, steps: number): boolean {
  return state.stopRequested || state.step > steps;
}

/** What `attune status` shows, the ETA from the mean of recent step durations. */
export function trainingStatus(view: {
  runName: string;
  algorithm: Algorithm;
  steps: number;
  state: TrainingState;
  phase: TrainingPhase;
  progress: RolloutProgressCounts;
  blockedReason: string | null;
  finishing?: FinishingStep | null;
}): TrainingStatus {
  const { state, phase, steps } = view;
  // The step under way counts as remaining until the run has ended.
  const remaining = Math.max(0, steps - state.step + (phase === 'done' || phase === 'stopped' ? 0 : 1));
  const perStep = state.stepDurationsMs.length > 0 ? mean(state.stepDurationsMs) : null;
  return {
    runName: view.runName,
    algorithm: view.algorithm,
    step: state.step,
    steps,
    phase,
    paused: state.paused,
    stopRequested: state.stopRequested,
    version: state.version,
    rollouts: { ...view.progress },
    blockedReason: view.blockedReason,
    lastMetrics: state.lastMetrics,
    etaMs: perStep === null ? null : Math.round(perStep * remaining),
    live: state.live,
    ...(state.tracking ? { tracking: state.tracking } : {}),
    ...(state.guard && (state.guard.warnings.length > 0 || state.guard.pausedBy)
      ? { guardrails: { warnings: state.guard.warnings, pausedBy: state.guard.pausedBy } }
      : {}),
    ...(state.stream ? { stream: streamStatus(state.stream.state) } : {}),
    ...(view.finishing ? { finishing: { ...view.finishing } } : {}),
  };
}

export function trainingResult(runName: string, state: TrainingState, stopped: boolean): TrainingResult {
  return {
    runName,
    stepsApplied: state.step - 1,
    stopped,
    version: state.version,
    lastMetrics: state.lastMetrics,
  };
}

/** A recorded step moves the run on: the next step, its metrics for status, its duration for the ETA. */
export function completeStep(state: TrainingState, step: number, record: StepMetricsRecord, durationMs: number): void {
  state.lastMetrics = record;
  state.stepDurationsMs = [...state.stepDurationsMs, durationMs].slice(-ETA_WINDOW);
  state.step = step + 1;
}
