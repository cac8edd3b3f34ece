import { plannedRolloutsOf } from '../core/training/stepPlan.js';
import { StepRolloutOutcomes } from '../core/training/stepRollouts.js';
import { runIsOver, type RolledOutStep } from '../core/training/trainingState.js';
import { utf8Length } from '../core/transcriptParts.js';
import { CARRIED_STEP_BYTES, rollOutStep, type RolledOutDialogues } from './trainingRollouts.js';
import { applyStep, survivorsOf, type StepContext, type StepToApply } from './trainingStep.js';

/** How a run of the pipelined workflow ended: continue as new, stopped by the operator, or every step applied. */
export type TickEnd = 'continue' | 'stopped' | 'over';

/**
 * One run of a training workflow with `maxStaleness` above 0: the optimizer trains the step whose
 * dialogues the previous run finished while the dialogues of the next step run, sampling the
 * version published when the run began (one step older than the weights being trained). Which
 * version a step samples follows from the step alone, so a run replays and re-runs to the same
 * metrics. A stop lets the dialogues under way finish and trains them in the next run, so no step
 * is half counted.
 */
export async function pipelinedTick(ctx: StepContext): Promise<TickEnd> {
  const { settings, state, control } = ctx;
  const startedAt = Date.now();
  const steps = control.inForce().steps;
  // A step rolled out beyond a step count the operator has lowered since is not trained.
  const toTrain = state.rolledOut && state.rolledOut.step <= steps ? state.rolledOut : null;
  state.rolledOut = null;
  const sampleFrom = { version: state.version, step: state.step - 1 };
  const next = toTrain ? toTrain.step + 1 : state.step;
  const rollsOut = !state.stopRequested && next <= steps && next - 1 - sampleFrom.step <= (settings.maxStaleness ?? 0);

  let trainingStopped = false;
  let rolloutsUnderWay = rollsOut;
  const training = toTrain
    ? applyStep(ctx, carriedStepToApply(ctx, toTrain, startedAt)).then((applied) => {
        trainingStopped = !applied;
        // Status shows what the run still waits for.
        if (rolloutsUnderWay) control.setPhase('rollouts');
      })
    : Promise.resolve();
  const rollouts = rollsOut
    ? rollOutStep(ctx, next, sampleFrom).finally(() => {
        rolloutsUnderWay = false;
      })
    : Promise.resolve(undefined);
  const [, rolled] = await Promise.all([training, rollouts]);
  if (trainingStopped || rolled === null) return 'stopped';
  if (rolled !== undefined) {
    if ('suspended' in rolled) {
      state.stepInProgress = rolled.suspended;
      return 'continue';
    }
    delete state.stepInProgress;
    const carried = rolledOutStep(ctx, next, rolled);
    if (utf8Length(JSON.stringify(carried)) <= CARRIED_STEP_BYTES) state.rolledOut = carried;
    // Too much to carry in one payload: the step trains in this history, as without overlap.
    else if (!(await applyStep(ctx, carriedStepToApply(ctx, carried, startedAt)))) return 'stopped';
  }
  return !state.rolledOut && runIsOver(state, control.inForce().steps) ? 'over' : 'continue';
}

/** What the next run needs to train a step whose dialogues are done (checked: some must survive). */
function rolledOutStep(ctx: StepContext, step: number, rolled: RolledOutDialogues): RolledOutStep {
  survivorsOf(ctx, step, rolled.outcomes);
  return {
    step,
    startedAt: rolled.startedAt,
    chosen: rolled.chosen,
    policyVersion: rolled.policyVersion,
    sampledFrom: rolled.sampledFrom,
    outcomes: rolled.outcomes.snapshot(),
  };
}

function carriedStepToApply(ctx: StepContext, carried: RolledOutStep, tickStartedAt: number): StepToApply {
  const outcomes = StepRolloutOutcomes.restored(
    plannedRolloutsOf(ctx.settings, carried.step, carried.chosen),
    carried.outcomes,
  );
  return {
    step: carried.step,
    // A step's duration is the run that trained it: with the overlap, that is the time per step.
    startedAt: tickStartedAt,
    policyVersion: carried.policyVersion,
    sampledFrom: carried.sampledFrom,
    survivors: survivorsOf(ctx, carried.step, outcomes),
  };
}
