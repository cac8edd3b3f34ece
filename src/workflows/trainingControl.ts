import {
  condition,
  defineQuery,
  defineUpdate,
  patched,
  setHandler,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import {
  applyLiveSet,
  checkLiveSet,
  settingsInForce,
  type AdjustableSettings,
} from '../core/training/liveOverrides.js';
import type { LiveSettings } from '../core/training/liveSet.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import {
  trainingResult,
  trainingStatus,
  type FinishingStep,
  type RolloutProgressCounts,
  type TrainingPhase,
  type TrainingResult,
  type TrainingState,
  type TrainingStatus,
} from '../core/training/trainingState.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { carriedWait, waitingReason } from '../core/outageWait.js';
import { DialogueWaits } from './dialogueWaits.js';
import { inFlightIds } from '../core/training/dialogueStream.js';
import { LIMITS } from '../config/limits.js';

export const trainingStatusQuery = defineQuery<TrainingStatus>('trainingStatus');
export const pauseUpdate = defineUpdate<TrainingStatus>('pause');
export const resumeUpdate = defineUpdate<TrainingStatus>('resume');
export const stopUpdate = defineUpdate<TrainingStatus>('stop');
export const setUpdate = defineUpdate<LiveSettings, [Record<string, unknown>]>('set');

/**
 * The operator's side of a run (`attune status|pause|resume|stop|set`): the phase and rollout
 * progress it reports, the handlers that change the carried state, and the waits on the operator.
 */
export class TrainingControl {
  private phase: TrainingPhase = 'starting';
  private blockedReason: string | null = null;
  private resumeRequested = false;
  /** The phase the run was in when its dialogues began to wait at failed calls. */
  private phaseBeforeWaits: TrainingPhase | null = null;
  /** Dialogues waiting for an operator at a failed LLM call (see src/workflows/outageWait.ts). */
  private readonly waits: DialogueWaits;
  /** Live counts for status; the step's fan-out keeps them up to date. */
  readonly progress: RolloutProgressCounts = { total: 0, done: 0, failed: 0, inFlight: 0 };
  /** The step published and recorded beside the next one, while that runs (see StepFinishing). */
  finishing: FinishingStep | null = null;

  constructor(
    private readonly settings: TrainingSettings,
    private readonly state: TrainingState,
  ) {
    // Dialogues that outlive a run of the workflow (first-finished steps) may wait across its continue-as-new.
    this.waits = new DialogueWaits(() => this.showWaits(), false, state.stream?.waits ?? []);
    if (state.stream) delete state.stream.waits;
    if (this.waits.count > 0) this.showWaits();
    setHandler(trainingStatusQuery, () => this.status());
    setHandler(pauseUpdate, () => {
      state.paused = true;
      return this.status();
    });
    setHandler(resumeUpdate, async () => {
      state.paused = false;
      this.resumeRequested = true;
      // Waiting dialogues retry their failed call and go on.
      if (this.waits.count > 0) {
        await this.waits.continueAll();
        this.showWaits();
      }
      return this.status();
    });
    setHandler(stopUpdate, () => {
      state.stopRequested = true;
      return this.status();
    });
    setHandler(
      setUpdate,
      (pairs) => {
        state.live = applyLiveSet(state.live, pairs);
        return state.live;
      },
      { validator: (pairs) => checkLiveSet(pairs, state.step - 1, settings.algorithm) },
    );
  }

  /** Steps, concurrency, failure limit and evaluation interval with the operator's changes. */
  inForce(): AdjustableSettings {
    return settingsInForce(this.settings, this.state.live);
  }

  status(): TrainingStatus {
    return trainingStatus({
      runName: this.settings.runName,
      algorithm: this.settings.algorithm,
      steps: this.inForce().steps,
      state: this.state,
      phase: this.phase,
      progress: this.waits.count > 0 ? { ...this.progress, waiting: this.waits.count } : this.progress,
      blockedReason: this.blockedReason,
      finishing: this.finishing,
    });
  }

  setPhase(next: TrainingPhase): void {
    // While dialogues wait, the run shows that; the phase it moved on to comes back after.
    if (this.phaseBeforeWaits !== null && next !== 'waiting-for-operator') this.phaseBeforeWaits = next;
    else this.showPhase(next);
  }

  private showPhase(next: TrainingPhase): void {
    this.phase = next;
    upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.phase, value: next }]);
  }

  /** While dialogues wait at failed calls, the run waits for the operator too, and says why. */
  private showWaits(): void {
    if (this.waits.count > 0) {
      if (this.phaseBeforeWaits === null) {
        this.phaseBeforeWaits = this.phase;
        this.showPhase('waiting-for-operator');
      }
      this.blockedReason = waitingReason(this.waits.list());
    } else if (this.phaseBeforeWaits !== null) {
      const back = this.phaseBeforeWaits;
      this.phaseBeforeWaits = null;
      this.blockedReason = null;
      this.showPhase(back);
    }
  }

  /**
   * Forgets the waits of dialogues that ended while they waited (cancelled, or closed by hand): no
   * notice comes from them. `patch` names the change that began it, so older histories replay.
   */
  forgetWaits(ids: readonly string[], patch: string): void {
    if (ids.length > 0 && patched(patch)) this.waits.forget(ids);
  }

  /** Before continue-as-new: the waits of the stream's dialogues still in flight go on to the next run. */
  carryWaits(): void {
    if (!this.state.stream) return;
    const running = new Set(inFlightIds(this.state.stream.state));
    const waits = this.waits
      .list()
      .filter((w) => running.has(w.rolloutId))
      .map((w) => carriedWait(w, LIMITS.carriedWaitErrorChars));
    if (waits.length > 0) this.state.stream.waits = waits;
    else delete this.state.stream.waits;
  }

  /** Shown in status until the next block or resume; an evaluation failure is reported this way. */
  report(reason: string): void {
    this.blockedReason = reason;
  }

  finish(stopped: boolean): TrainingResult {
    this.setPhase(stopped ? 'stopped' : 'done');
    return trainingResult(this.settings.runName, this.state, stopped);
  }

  /**
   * Resolves when the run is no longer paused, or is stopped. The condition's own promise, not an
   * async wrapper: rollout lanes wait on it, and extra ticks could reorder their child starts.
   */
  pauseLifted(): Promise<void> {
    return condition(() => !this.state.paused || this.state.stopRequested);
  }

  /** Blocks the run in `waiting-for-operator` until `attune resume` (true) or `attune stop` (false). */
  async resumedByOperator(reason: string): Promise<boolean> {
    this.blockedReason = reason;
    this.setPhase('waiting-for-operator');
    this.resumeRequested = false;
    await condition(() => this.resumeRequested || this.state.stopRequested);
    if (this.state.stopRequested) return false;
    this.blockedReason = null;
    this.setPhase('rollouts');
    return true;
  }
}
