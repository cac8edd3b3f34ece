import { ApplicationFailure } from '@temporalio/common';

/** Whether a workflow's latest run is open, closed, or unknown to the server. */
export type WorkflowStateOf = (workflowId: string) => Promise<'open' | 'closed' | 'unknown'>;

/**
 * The watchdog of steps that take the first finished dialogues: a dialogue tells the training
 * workflow its end by a signal, which one that was terminated or timed out never sends. When the
 * stream has been still for a while, the workflow asks which of its dialogues in flight have closed.
 */
export function createDialogueWatchActivities(stateOf?: WorkflowStateOf) {
  return {
    /** The ids among `ids` whose workflows have closed, or that the server does not know. */
    async closedDialogues(ids: string[]): Promise<string[]> {
      if (!stateOf)
        throw ApplicationFailure.nonRetryable(
          'this worker has no Temporal connection to describe dialogues with',
          'NoWorkflowDescriber',
        );
      const closed: string[] = [];
      for (const id of ids) if ((await stateOf(id)) !== 'open') closed.push(id);
      return closed;
    },
  };
}
