import type { Client } from '@temporalio/client';
import { isValidName, NAME_RULE } from '../core/names.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';

/** A dialogue of a run (training or evaluation) that waits for an operator at a failed LLM call. */
export interface WaitingRollout {
  rolloutId: string;
  step: number | null;
  scenarioId: string | null;
  startTime: string;
}

/**
 * The run's dialogues that wait now (AttuneOutcome=waiting, still running), from the server's
 * visibility, which indexes a change a moment after it happens.
 */
export async function listWaitingRollouts(client: Client, runName: string): Promise<WaitingRollout[]> {
  if (!isValidName(runName)) throw new Error(`run name "${runName}": not a valid name (${NAME_RULE})`);
  const { kind, runName: run, outcome } = SEARCH_ATTRIBUTES;
  const query = `${kind.name} = 'rollout' AND ${run.name} = '${runName}' AND ${outcome.name} = 'waiting' AND ExecutionStatus = 'Running'`;
  const found: WaitingRollout[] = [];
  for await (const info of client.workflow.list({ query })) {
    const attrs = info.typedSearchAttributes;
    found.push({
      rolloutId: info.workflowId,
      step: attrs.get(SEARCH_ATTRIBUTES.step) ?? null,
      scenarioId: attrs.get(SEARCH_ATTRIBUTES.scenarioId) ?? null,
      startTime: info.startTime.toISOString(),
    });
  }
  return found.sort((a, b) => (a.step ?? 0) - (b.step ?? 0) || a.rolloutId.localeCompare(b.rolloutId));
}
