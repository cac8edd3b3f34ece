import { allHandlersFinished, condition, continueAsNew, upsertSearchAttributes } from '@temporalio/workflow';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import {
  initialTrainingState,
  runIsOver,
  type TrainingResult,
  type TrainingState,
} from '../core/training/trainingState.js';
import { ensureCapabilityBase } from './trainingCapability.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { TrainingControl } from './trainingControl.js';
import { pipelinedTick } from './trainingPipeline.js';
import { DialogueStreamRun } from './trainingStream.js';
import { replicasServeFirstVersion, replicasServeVersion } from './replicaPublish.js';
import { rollOutStep } from './trainingRollouts.js';
import {
  applyStep,
  bookkeepingActivities,
  ensureTrainerRun,
  optimizerActivities,
  survivorsOf,
  type StepContext,
} from './trainingStep.js';

export type { TrainingPhase, TrainingResult, TrainingState, TrainingStatus } from '../core/training/trainingState.js';
export { pauseUpdate, resumeUpdate, setUpdate, stopUpdate, trainingStatusQuery } from './trainingControl.js';

export interface TrainingInput {
  settings: TrainingSettings;
  state?: TrainingState;
}

export function trainingWorkflowId(runName: string): string {
  return `train-${runName}`;
}

/**
 * An RLVER run: each step samples scenarios from (seed, step), runs their dialogues as child
 * workflows (bounded), sends them to the optimizer (exactly once, keyed by run and step),
 * publishes the new weights, records metrics, then continues as new with a small state. With
 * `maxStaleness` above 0, each run of the workflow trains one step while the next one's
 * dialogues run (see `pipelinedTick`).
 */
export async function training(input: TrainingInput): Promise<TrainingResult> {
  const settings = input.settings;
  const state = input.state ?? initialTrainingState(settings.publish.baseVersion);
  const control = new TrainingControl(settings, state);
  const ctx: StepContext = {
    settings,
    state,
    control,
    bookkeeping: bookkeepingActivities(settings),
    optimizer: optimizerActivities(settings),
  };
  // Steps that take the first finished dialogues: told of each dialogue's end from here on.
  const stream = settings.stepDialogues === 'firstFinished' ? new DialogueStreamRun(ctx) : null;
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'training' },
    { key: SEARCH_ATTRIBUTES.runName, value: settings.runName },
    { key: SEARCH_ATTRIBUTES.step, value: state.step - 1 },
  ]);

  if (!state.initialized) {
    await ensureTrainerRun(ctx.optimizer, settings);
    state.initialized = true;
    // Retention is read against the base: scored while it is still what the policy server serves.
    await ensureCapabilityBase(settings, state, control);
  }
  const pipelined = stream === null && (settings.maxStaleness ?? 0) > 0;
  // A step trained but not yet published or recorded (pipelined, or first finished) is finished first.
  const stepLeft = (pipelined && !!state.rolledOut) || !!stream?.holdsOptimized;
  if (runIsOver(state, control.inForce().steps) && !stepLeft) {
    await stream?.cancelInFlight();
    return control.finish(state.stopRequested);
  }

  // Paused between steps: wait before starting the next one.
  if (state.paused) {
    control.setPhase('paused');
    await control.pauseLifted();
    if (state.stopRequested && !stepLeft) {
      await stream?.cancelInFlight();
      return control.finish(true);
    }
  }

  if ((stream || pipelined) && !(await replicasServeFirstVersion(settings, control, state.step)))
    return control.finish(true);
  if (stream) {
    const next = await stream.tick();
    if (next === 'stopped') return control.finish(true);
    if (next === 'over') return control.finish(state.stopRequested);
  } else if (pipelined) {
    const next = await pipelinedTick(ctx);
    if (next === 'stopped') return control.finish(true);
    if (next === 'over') return control.finish(state.stopRequested);
  } else {
    const step = state.step;
    if (!(await replicasServeVersion(settings, control, step))) return control.finish(true);
    const rolled = await rollOutStep(ctx, step, { version: state.version, step: step - 1 });
    if (rolled === null) return control.finish(true);
    if ('suspended' in rolled) {
      state.stepInProgress = rolled.suspended;
      await condition(allHandlersFinished);
      return continueAsNew<typeof training>({ settings, state });
    }
    delete state.stepInProgress;
    const survivors = survivorsOf(ctx, step, rolled.outcomes);
    const applied = await applyStep(ctx, {
      step,
      startedAt: rolled.startedAt,
      policyVersion: rolled.policyVersion,
      sampledFrom: rolled.sampledFrom,
      survivors,
    });
    if (!applied) return control.finish(true);
    if (runIsOver(state, control.inForce().steps)) return control.finish(state.stopRequested);
  }
  // Let update handlers finish, then start the next step with a fresh history.
  await condition(allHandlersFinished);
  control.carryWaits();
  return continueAsNew<typeof training>({ settings, state });
}
