/**
 * Where each artifact lives in the store: the one place that builds keys, so writers (activities),
 * readers (reports, the CLI) and the store's own key check agree. Keys are `/`-separated parts
 * made of KEY_PART_CHARS only; names from outside (run names, ids) pass through `keyPart`.
 */

import { isValidArtifactKey, keyPart } from '../core/names.js';

export { isValidArtifactKey, keyPart };

/** Transcripts of rollouts outside any run sit under this run name. */
export const ADHOC_RUN = 'adhoc';

/** `rollouts/<run>`: the transcripts of one run. */
export function runTranscriptsPrefix(runName: string | null): string {
  return `rollouts/${keyPart(runName ?? ADHOC_RUN)}`;
}

/** `rollouts/<run>/<rollout>.json`: one dialogue's transcript. */
export function transcriptKey(runName: string | null, rolloutId: string): string {
  return `${runTranscriptsPrefix(runName)}/${keyPart(rolloutId)}.json`;
}

/** `rollout-parts/<run>/<rollout>`: turns of a transcript written before the dialogue ended. */
export function transcriptPartsPrefix(runName: string | null, rolloutId: string): string {
  return `rollout-parts/${keyPart(runName ?? ADHOC_RUN)}/${keyPart(rolloutId)}`;
}

/** `rollout-parts/<run>/<rollout>/<index>.json`: one part, the index zero-padded so parts list in order. */
export function transcriptPartKey(runName: string | null, rolloutId: string, index: number): string {
  return `${transcriptPartsPrefix(runName, rolloutId)}/${String(index).padStart(6, '0')}.json`;
}

/** `runs/<run>/metrics.jsonl`: one StepMetricsRecord per line. */
export function runMetricsKey(runName: string): string {
  return `runs/${keyPart(runName)}/metrics.jsonl`;
}

/** `runs/<run>/tracking.json`: what each experiment tracker has logged of the run (see trackingLedger.ts). */
export function trackingLedgerKey(runName: string): string {
  return `runs/${keyPart(runName)}/tracking.json`;
}

/** `runs/<run>/tb`: the run's TensorBoard log directory (`tensorboard --logdir $ATTUNE_HOME/artifacts/runs`). */
export function tensorboardDirKey(runName: string): string {
  return `runs/${keyPart(runName)}/tb`;
}

/** `runs/<run>/wandb/<step>`: one step's offline W&B run directory, zero-padded so steps list in order. */
export function wandbStepDirKey(runName: string, step: number): string {
  return `runs/${keyPart(runName)}/wandb/${String(step).padStart(10, '0')}`;
}

/** Prefix under which every evaluation report lies. */
export const EVALUATIONS_PREFIX = 'evaluations';
const EVALUATION_FILE = 'evaluation.json';

/** `evaluations/<id>/evaluation.json`: one evaluation report. */
export function evaluationKey(evalId: string): string {
  return `${EVALUATIONS_PREFIX}/${keyPart(evalId)}/${EVALUATION_FILE}`;
}

/** Whether a key (from listing EVALUATIONS_PREFIX) is an evaluation report. */
export function isEvaluationKey(key: string): boolean {
  return key.startsWith(`${EVALUATIONS_PREFIX}/`) && key.endsWith(`/${EVALUATION_FILE}`);
}

/** `evaluations/<id>/capability.json`: a capability suite's report (math, code), beside no Sentient report of that id. */
export function capabilityReportKey(evalId: string): string {
  return `${EVALUATIONS_PREFIX}/${keyPart(evalId)}/capability.json`;
}

/** `evaluations/<id>/problems/<problem>.json`: one problem of a capability suite: prompt, reply, what scoring saw. */
export function capabilityProblemKey(evalId: string, problemId: string): string {
  return `${EVALUATIONS_PREFIX}/${keyPart(evalId)}/problems/${keyPart(problemId)}.json`;
}

/** `reports/<target>`: the default output folder of `attune report` for a run or an evaluation. */
export function reportDirKey(target: string): string {
  return `reports/${keyPart(target)}`;
}
