import { patched } from '@temporalio/workflow';
import type { StepMetricsRecord } from '../core/runMetrics.js';
import { acknowledged, emptyGuardState, guardPointOf, guardStep, type GuardTrip } from '../core/training/guardrails.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { TrainingState } from '../core/training/trainingState.js';
import type { TrainingControl } from './trainingControl.js';

/** Marks histories whose runs check guardrails: older ones replay without the check. */
const GUARDRAILS_PATCH = 'training-guardrails';
/** Marks histories whose guardrails keep the last evaluations apart from the last 64 steps. */
const GUARD_EVALUATIONS_PATCH = 'guard-evaluations-kept-apart';

/**
 * Checks the run's guardrails on a step's record before it is written (pure: guardrails.ts): the
 * record names the rules that tripped, status keeps the warnings; returns the pausing trip, if any.
 */
export function checkGuardrails(
  settings: TrainingSettings,
  state: TrainingState,
  record: StepMetricsRecord,
): { record: StepMetricsRecord; pause: GuardTrip | null } {
  const previous = state.guard ?? emptyGuardState();
  if (record.eval) state.guard = { ...previous, lastEvalScore: record.eval.score };
  const rules = settings.guardrails ?? [];
  if (rules.length === 0 || !patched(GUARDRAILS_PATCH)) return { record, pause: null };
  const checked = guardStep(state.guard ?? previous, rules, guardPointOf(record), {
    evaluationsApart: patched(GUARD_EVALUATIONS_PATCH),
  });
  state.guard = checked.state;
  const trips = [...(checked.pause ? [checked.pause] : []), ...checked.alsoPausing, ...checked.warnings];
  return {
    record:
      trips.length === 0
        ? record
        : { ...record, guardrails: trips.map(({ rule, action, message }) => ({ rule, action, message })) },
    pause: checked.pause,
  };
}

/**
 * A pausing rule tripped: the run waits for the operator with the rule's name and figures (status
 * shows both); after `attune resume` the rule warns until a step where it is clear. False when
 * the operator stopped the run instead.
 */
export async function waitOnGuardrail(
  state: TrainingState,
  control: TrainingControl,
  trip: GuardTrip,
): Promise<boolean> {
  state.guard = { ...(state.guard ?? emptyGuardState()), pausedBy: trip };
  const resumed = await control.resumedByOperator(`${trip.message} (${JSON.stringify(trip.figures)})`);
  state.guard = acknowledged(state.guard, trip);
  return resumed;
}
