import { executeChild, workflowInfo } from '@temporalio/workflow';
import type { CapabilitySuiteRun, CapabilitySummary } from '../core/capability/capabilityReport.js';
import { capabilityBaseOf, capabilityStepScore, type CapabilityStepScore } from '../core/capability/retention.js';
import { evaluatesAfterStep, evaluationSettingsAt, stepEvaluationId } from '../core/training/stepPlan.js';
import type { TrainingSettings } from '../core/training/trainingSettingsSchema.js';
import type { TrainingState } from '../core/training/trainingState.js';
import { capabilityEvaluation } from './capabilityEvaluation.js';
import { failureMessage } from './fanOut.js';
import type { TrainingControl } from './trainingControl.js';

/**
 * Capability retention (`training.evalSuites`): the suites run as children beside each Sentient
 * evaluation, on the same version, and once on the base policy. Without suites nothing here runs,
 * so older runs replay as they were recorded.
 */

/** One suite on `version`; a failure is reported (null), not fatal to training, as the Sentient evaluation's. */
async function runSuite(
  settings: TrainingSettings,
  control: TrainingControl,
  run: CapabilitySuiteRun,
  step: number,
  version: string,
): Promise<CapabilitySummary | null> {
  const evalId = `${stepEvaluationId(settings.runName, step)}-${run.suite}`;
  try {
    return await executeChild(capabilityEvaluation, {
      workflowId: evalId,
      taskQueue: workflowInfo().taskQueue,
      args: [
        {
          evalId,
          ...run,
          settings: evaluationSettingsAt(settings.evalSettings!, settings.publish.policyBaseURL, version),
          seed: settings.seed,
          concurrency: settings.evalConcurrency,
          runName: settings.runName,
          step,
        },
      ],
    });
  } catch (error) {
    control.report(`capability evaluation ${evalId} failed: ${failureMessage(error)}`);
    return null;
  }
}

/**
 * Scores the base policy (step 0) on each suite the run has no base score for: before step 1, and
 * again at a later evaluation if that failed. What retention is read against.
 */
export async function ensureCapabilityBase(
  settings: TrainingSettings,
  state: TrainingState,
  control: TrainingControl,
): Promise<void> {
  const missing = (settings.evalSuites ?? []).filter((r) => !state.capabilityBase?.some((b) => b.suite === r.suite));
  if (missing.length === 0 || !settings.evalSettings) return;
  control.setPhase('evaluating');
  const scored = await Promise.all(
    missing.map((run) => runSuite(settings, control, run, 0, settings.publish.baseVersion)),
  );
  for (const summary of scored)
    if (summary) state.capabilityBase = [...(state.capabilityBase ?? []), capabilityBaseOf(summary)];
}

/** The suites' scores of a step's evaluation, each with the base's; undefined when none is due or none ran. */
export async function evaluateSuites(
  settings: TrainingSettings,
  state: TrainingState,
  control: TrainingControl,
  step: number,
  version: string,
): Promise<CapabilityStepScore[] | undefined> {
  if (!settings.evalSuites || !settings.evalSettings) return undefined;
  const inForce = control.inForce();
  if (!evaluatesAfterStep(step, inForce.evalEvery, inForce.steps)) return undefined;
  await ensureCapabilityBase(settings, state, control);
  control.setPhase('evaluating');
  const scored = await Promise.all(settings.evalSuites.map((run) => runSuite(settings, control, run, step, version)));
  const scores = scored.flatMap((summary) => (summary ? [capabilityStepScore(summary, state.capabilityBase)] : []));
  return scores.length > 0 ? scores : undefined;
}
