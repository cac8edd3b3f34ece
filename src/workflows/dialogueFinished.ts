import { defineSignal, getExternalWorkflowHandle, isCancellation, log } from '@temporalio/workflow';
import type { RolloutSummary } from '../core/transcript.js';
import { failureMessage } from './fanOut.js';

/** A training dialogue's end, as it tells the training workflow that started it (steps that take the first finished). */
export type DialogueFinished = { rolloutId: string } & (
  { ok: true; summary: RolloutSummary } | { ok: false; error: string }
);

export const dialogueFinishedSignal = defineSignal<[DialogueFinished]>('dialogueFinished');

/**
 * Plays a dialogue and, when `reportTo` names a workflow, signals it the result or the failure.
 * The signal goes by workflow id, so it reaches the run the training workflow has continued into.
 * A cancelled dialogue (its weights fell below the staleness bound) tells nothing: the training
 * workflow cancelled it. A training workflow that has closed cannot be told; the dialogue's own
 * result stays in its history.
 */
export async function reportingEnd(
  rolloutId: string,
  reportTo: string | undefined,
  play: () => Promise<RolloutSummary>,
): Promise<RolloutSummary> {
  if (!reportTo) return play();
  let summary: RolloutSummary;
  try {
    summary = await play();
  } catch (error) {
    if (!isCancellation(error)) await tell(reportTo, { rolloutId, ok: false, error: failureMessage(error) });
    throw error;
  }
  await tell(reportTo, { rolloutId, ok: true, summary });
  return summary;
}

async function tell(workflowId: string, message: DialogueFinished): Promise<void> {
  try {
    await getExternalWorkflowHandle(workflowId).signal(dialogueFinishedSignal, message);
  } catch (error) {
    log.warn('the training workflow could not be told of the dialogue', {
      workflowId,
      rolloutId: message.rolloutId,
      error: failureMessage(error),
    });
  }
}
