import {
  condition,
  getExternalWorkflowHandle,
  log,
  patched,
  ParentClosePolicy,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import { LIMITS } from '../config/limits.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import {
  abandonStale,
  defaultMaxWaiting,
  dialogueOf,
  endStream,
  finished,
  inFlightIds,
  initialDialogueStream,
  oldestUsableVersion,
  refill,
  takeStep,
  waitingIds,
  type StreamDialogue,
} from '../core/training/dialogueStream.js';
import { plannedRolloutSettings, stepRolloutSettings } from '../core/training/stepPlan.js';
import { stepRolloutResultOf } from '../core/training/stepRollouts.js';
import type { CarriedStream } from '../core/training/trainingState.js';
import { dialogueFinishedSignal, type DialogueFinished } from './dialogueFinished.js';
import { failureMessage } from './fanOut.js';
import { rollout } from './rollout.js';
import type { TickEnd } from './trainingPipeline.js';
import {
  finishStep,
  optimizeStepWithOperator,
  type OptimizedStep,
  type StepContext,
  type StepToApply,
} from './trainingStep.js';
import { publishesWhileOptimizing } from '../core/training/publishOverlap.js';
import { fitsCarried, PUBLISH_WHILE_OPTIMIZING_PATCH, StepFinishing } from './stepFinishing.js';
import { WAITS_FORGOTTEN_AT_CANCEL_PATCH, WAITS_FORGOTTEN_AT_CLOSE_PATCH } from './dialogueWaits.js';
import { takenStepToApply } from './takenStep.js';

/**
 * Steps that take the first finished dialogues (`training.stepDialogues: firstFinished`): one run of
 * the training workflow gathers step `state.step` from a stream of dialogues that never stops
 * (src/core/training/dialogueStream.ts keeps its books), trains and publishes it while the stream
 * goes on, then continues as new with the stream in its state.
 *
 * The dialogues are child workflows started with ParentClosePolicy ABANDON, so they run on across
 * continue-as-new; each tells the training workflow its end by a signal by workflow id, which
 * reaches the newest run (`dialogueFinished`). What a run has handled is in the state it carries;
 * a signal it has not handled goes to the next run, which holds the same ids, so each end counts
 * once. When the stream has been still for `training.dialogueWatchSeconds`, the run asks the server which of
 * its dialogues in flight have closed without telling (terminated, timed out) and counts them failed.
 */
export class DialogueStreamRun {
  private readonly carried: CarriedStream;
  /** Grows with each dialogue's end: what the run's waits watch. */
  private ends = 0;
  private scenarioIds: readonly string[] | null = null;
  /** The last failed dialogue's id and error, for the operator. */
  private lastFailure: string | null = null;
  /** Failures counted before the step under way began to gather (or the operator last resumed). */
  private failedBefore: number;
  /** The step this run gathers, and the version served when it began. */
  private readonly tickStep: number;
  /** The step before it when that one's publish and record were left to this run (`publishesWhileOptimizing`). */
  private readonly optimized: OptimizedStep | null;
  private readonly tickVersion: string;
  /** Dialogues a step takes at least: a planned step's. */
  private readonly dialoguesPerStep: number;

  constructor(private readonly ctx: StepContext) {
    ctx.state.stream ??= { state: initialDialogueStream(ctx.settings.runName), results: {}, versionNames: {} };
    this.carried = ctx.state.stream;
    this.optimized = this.carried.optimized ?? null;
    delete this.carried.optimized;
    this.tickStep = this.optimized ? this.optimized.step + 1 : ctx.state.step;
    this.failedBefore = this.carried.state.counts.failed;
    this.tickVersion = ctx.state.version;
    this.dialoguesPerStep = ctx.settings.scenariosPerStep * ctx.settings.samplesPerScenario;
    setHandler(dialogueFinishedSignal, (message) => this.ended(message));
  }

  /** Whether the previous run left this one a step optimized but not yet published and recorded. */
  get holdsOptimized(): boolean {
    return this.optimized !== null;
  }

  /**
   * One run of the workflow: gather the step, train it while the stream goes on. Where the publish
   * may overlap the next optimizer step (`publishesWhileOptimizing`), the step before it, optimized by
   * the previous run, is published and recorded meanwhile, and this step's publish and record are left
   * to the next run: a step then costs the longer of the two, not their sum.
   */
  async tick(): Promise<TickEnd> {
    const { state, control } = this.ctx;
    const step = this.tickStep;
    const startedAt = Date.now();
    control.setPhase('rollouts');
    const finishing = new StepFinishing(this.ctx, this.optimized);
    // Past the last step, or stopped: only the step left optimized is finished.
    if (step > control.inForce().steps || (this.optimized && state.stopRequested)) {
      const finished = await this.feedWhile(step, () => finishing.done);
      await this.cancelInFlight();
      return !finished || state.stopRequested ? 'stopped' : 'over';
    }
    let toApply: StepToApply | null = null;
    // Status names the publish and record while they run, then the gathering again.
    if (this.optimized) void finishing.done.then((finished) => finished && !toApply && control.setPhase('rollouts'));
    for (;;) {
      await this.startDialogues(step);
      const result = takeStep(this.carried.state, this.takeSettings(step));
      this.carried.state = result.state;
      if (result.ready)
        toApply = takenStepToApply(this.ctx, this.carried, {
          step,
          take: result.take,
          groups: result.groups,
          startedAt,
        });
      this.forgetDropped();
      if (toApply) break;
      if (finishing.stopped) return this.stopAfter(finishing);
      // Stopped with nothing left to finish the step with: the run ends without it.
      if (state.stopRequested && inFlightIds(this.carried.state).length === 0) return this.stopAfter(finishing);
      const failing = this.failingReason(step);
      if (failing !== null) {
        // No new dialogue starts while the run waits: an endpoint that fails every call is not fed more.
        if (!(await control.resumedByOperator(failing))) return this.stopAfter(finishing);
        this.failedBefore = this.carried.state.counts.failed;
        continue;
      }
      await this.waitForAnEnd(finishing);
    }
    // Past the last step the run ends, and the end cancels what runs.
    if (step < control.inForce().steps) await this.cancel(this.abandonStale(step + 1));
    const ready = toApply;
    const trained = await this.feedWhile(step + 1, () => this.trainStep(ready, finishing));
    if (trained === 'stopped') {
      await this.cancelInFlight();
      return 'stopped';
    }
    if (trained === 'finished' && (state.stopRequested || state.step > control.inForce().steps)) {
      await this.cancelInFlight();
      return state.stopRequested ? 'stopped' : 'over';
    }
    return 'continue';
  }

  /**
   * Trains the gathered step. Where the publish may overlap (`publishesWhileOptimizing`), the optimizer
   * step runs while the previous step finishes, and this step is left optimized for the next run
   * ('carried'); else it runs after that and the step is published and recorded here ('finished').
   * 'stopped' when the operator stopped the run (reported when the trainer had applied the step by then).
   */
  private async trainStep(ready: StepToApply, finishing: StepFinishing): Promise<'carried' | 'finished' | 'stopped'> {
    const overlaps =
      publishesWhileOptimizing(this.ctx.settings) && fitsCarried(ready) && patched(PUBLISH_WHILE_OPTIMIZING_PATCH);
    if (!overlaps && !(await finishing.done)) return 'stopped';
    const applied = await optimizeStepWithOperator(this.ctx, ready);
    if (!(await finishing.done)) {
      if (applied) this.reportUnpublished(ready.step);
      return 'stopped';
    }
    if (applied === null) return 'stopped';
    const optimized = { ...ready, applied };
    if (!overlaps) return (await finishStep(this.ctx, optimized)) ? 'finished' : 'stopped';
    this.carried.optimized = optimized;
    return 'carried';
  }

  /** Ends the run stopped, once the step left optimized (if any) is finished. */
  private async stopAfter(finishing: StepFinishing): Promise<TickEnd> {
    await finishing.done;
    await this.cancelInFlight();
    return 'stopped';
  }

  /** The trainer applied a step that the run, stopped, will not publish or record: said, not silent. */
  private reportUnpublished(step: number): void {
    this.ctx.control.report(
      `step ${step}: applied by the trainer, not published or recorded: the run stopped while the step before it was published`,
    );
  }

  /**
   * Why the run should wait for the operator: since the step began to gather, at least a step's
   * worth of dialogues failed, more than `maxFailedShare` of those that ended (as a planned step
   * waits). Null while the failures stay below that.
   */
  private failingReason(step: number): string | null {
    const { control } = this.ctx;
    const failed = this.carried.state.counts.failed - this.failedBefore;
    const ended = failed + waitingIds(this.carried.state).length;
    const share = control.inForce().maxFailedShare;
    if (failed < this.dialoguesPerStep || failed / ended <= share) return null;
    const last = this.lastFailure ? `; the last: ${this.lastFailure}` : '';
    return `step ${step}: ${failed} of the ${ended} dialogues that ended since it began gathering failed (limit ${Math.round(share * 100)}%)${last}`;
  }

  private takeSettings(step: number) {
    const { settings } = this.ctx;
    return {
      step,
      dialoguesPerStep: this.dialoguesPerStep,
      maxStaleness: settings.maxStaleness ?? 0,
      algorithm: settings.algorithm,
    };
  }

  /**
   * The step the weights now served hold: the newest published when this run began, until the run's
   * one publish names a new version (the step's record moves `state.step` later).
   */
  private servedStep(): number {
    const atStart = (this.optimized ? this.optimized.step : this.tickStep) - 1;
    return this.ctx.state.version === this.tickVersion ? atStart : atStart + 1;
  }

  /** Starts dialogues until `maxInFlight` run (none while paused or stopping). */
  private async startDialogues(step: number): Promise<void> {
    const { settings, state, control, bookkeeping } = this.ctx;
    // No dialogue for a step past the run's last: none would train on it.
    if (state.paused || state.stopRequested || step > control.inForce().steps) return;
    this.scenarioIds ??= await bookkeeping.listScenarioIds(settings.scenarioDir);
    const maxStaleness = settings.maxStaleness ?? 0;
    const { state: next, start } = refill(
      this.carried.state,
      {
        runName: settings.runName,
        seed: settings.seed,
        samplesPerScenario: settings.samplesPerScenario,
        maxInFlight: control.inForce().maxInFlight,
        maxStaleness,
        maxWaiting: defaultMaxWaiting(this.dialoguesPerStep, maxStaleness),
        dialoguesPerStep: this.dialoguesPerStep,
        difficultyMix: settings.difficultyMix,
      },
      { step, version: this.servedStep() },
      this.scenarioIds,
    );
    this.carried.state = next;
    if (start.length > 0) this.nameVersion(this.servedStep(), state.version, step);
    await Promise.all(start.map((d) => this.startDialogue(d, step)));
    this.showProgress();
  }

  private async startDialogue(d: StreamDialogue, step: number): Promise<void> {
    const { settings, state } = this.ctx;
    const sampling = stepRolloutSettings(settings.rollout, state.version, state.live.temperature);
    const dialogueSettings = plannedRolloutSettings(sampling, {
      rolloutId: d.rolloutId,
      scenarioId: d.scenarioId,
      group: d.group,
      seed: d.seed,
      ...(d.difficulty !== undefined ? { difficulty: d.difficulty } : {}),
    });
    await startChild(rollout, {
      ...rolloutStartOptions(dialogueSettings),
      workflowId: d.rolloutId,
      taskQueue: workflowInfo().taskQueue,
      // It outlives this run of the training workflow, which continues as new every step.
      parentClosePolicy: ParentClosePolicy.ABANDON,
      args: [
        {
          rolloutId: d.rolloutId,
          scenarioRef: { dir: settings.scenarioDir, id: d.scenarioId },
          settings: dialogueSettings,
          seed: d.seed,
          runName: settings.runName,
          step,
          reportTo: workflowInfo().workflowId,
        },
      ],
    });
  }

  /** Remembers the name of a version dialogues sample, while a step from `step` on may still take them. */
  private nameVersion(version: number, name: string, step: number): void {
    const names = this.carried.versionNames;
    names[version] = name;
    const floor = oldestUsableVersion(step, this.ctx.settings.maxStaleness ?? 0);
    for (const key of Object.keys(names)) if (Number(key) < floor) delete names[Number(key)];
  }

  /** A dialogue's signal: its result waits for a step; a repeated or unknown one changes nothing. */
  private ended(message: DialogueFinished): void {
    const known = dialogueOf(this.carried.state, message.rolloutId);
    const { state, recorded } = finished(
      this.carried.state,
      message.rolloutId,
      message.ok ? { ok: true } : { ok: false, error: message.error },
    );
    if (!recorded || !known) return;
    this.carried.state = state;
    if (message.ok) this.carried.results[message.rolloutId] = stepRolloutResultOf(message.summary);
    else this.lastFailure = `${message.rolloutId}: ${message.error}`;
    this.ends++;
    this.showProgress();
  }

  /** Waits for a dialogue's end, a stop or a resume; when none comes for a while, asks which dialogues closed. */
  private async waitForAnEnd(finishing: StepFinishing): Promise<void> {
    const { state } = this.ctx;
    const seen = this.ends;
    const paused = state.paused;
    const served = this.servedStep();
    const moved = await condition(
      () =>
        this.ends !== seen ||
        state.stopRequested ||
        state.paused !== paused ||
        this.servedStep() !== served ||
        finishing.stopped,
      (this.ctx.settings.dialogueWatchSeconds ?? LIMITS.dialogueWatchMs / 1000) * 1000,
    );
    if (moved) return;
    const running = inFlightIds(this.carried.state);
    if (running.length === 0) return;
    const closed = await this.ctx.bookkeeping.closedDialogues(running);
    this.ctx.control.forgetWaits(closed, WAITS_FORGOTTEN_AT_CLOSE_PATCH);
    for (const id of closed)
      this.ended({
        rolloutId: id,
        ok: false,
        error: 'the dialogue closed without telling the training workflow its end',
      });
  }

  /** Runs `work` (the optimizer step, the publish) while ended dialogues are replaced, for step `next`. */
  private async feedWhile<T>(next: number, work: () => Promise<T>): Promise<T> {
    let working = true;
    const feeding = (async () => {
      while (working) {
        const seen = this.ends;
        const served = this.servedStep();
        await this.startDialogues(next);
        const paused = this.ctx.state.paused;
        await condition(
          () => !working || this.ends !== seen || this.servedStep() !== served || this.ctx.state.paused !== paused,
        );
      }
    })();
    try {
      return await work();
    } finally {
      working = false;
      await feeding;
    }
  }

  /** Dialogues still running that no step from `step` on may take: marked dropped, to cancel. */
  private abandonStale(step: number): string[] {
    const { state, abandoned } = abandonStale(this.carried.state, step, this.ctx.settings.maxStaleness ?? 0);
    this.carried.state = state;
    return abandoned;
  }

  /** Cancels the dialogues still running: the run ends, and no step will take them. */
  async cancelInFlight(): Promise<void> {
    const { state, cancelled } = endStream(this.carried.state);
    this.carried.state = state;
    await this.cancel(cancelled);
  }

  /** Cancels dialogues by id; one that has closed meanwhile has nothing to cancel. */
  private async cancel(ids: string[]): Promise<void> {
    // One cancelled while it waited at a failed call sends no notice that its wait is over.
    this.ctx.control.forgetWaits(ids, WAITS_FORGOTTEN_AT_CANCEL_PATCH);
    await Promise.all(
      ids.map(async (id) => {
        try {
          await getExternalWorkflowHandle(id).cancel();
        } catch (error) {
          // It closed meanwhile (its end's signal may be on its way, and is then ignored).
          log.info('dialogue not cancelled', { rolloutId: id, error: failureMessage(error) });
        }
      }),
    );
  }

  /** Keeps results only of the dialogues still waiting for a step. */
  private forgetDropped(): void {
    const waiting = new Set(waitingIds(this.carried.state));
    for (const id of Object.keys(this.carried.results)) if (!waiting.has(id)) delete this.carried.results[id];
  }

  private showProgress(): void {
    const progress = this.ctx.control.progress;
    const counts = this.carried.state.counts;
    progress.inFlight = inFlightIds(this.carried.state).length;
    progress.done = counts.taken + waitingIds(this.carried.state).length;
    progress.failed = counts.failed;
    progress.total = this.dialoguesPerStep;
  }
}
