import type { Client, WorkflowExecutionInfo } from '@temporalio/client';
import { evaluationRows, runRows, type EvaluationRow, type ListedExecution, type RunRow } from '../core/runListing.js';
import { isValidName, NAME_RULE } from '../core/names.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { trainingWorkflowId } from '../workflows/training.js';

function listed(info: WorkflowExecutionInfo): ListedExecution {
  const attrs = info.typedSearchAttributes;
  return {
    workflowId: info.workflowId,
    status: info.status.name,
    startTime: info.startTime,
    closeTime: info.closeTime ?? null,
    runName: attrs.get(SEARCH_ATTRIBUTES.runName) ?? null,
    phase: attrs.get(SEARCH_ATTRIBUTES.phase) ?? null,
    step: attrs.get(SEARCH_ATTRIBUTES.step) ?? null,
    meanReward: attrs.get(SEARCH_ATTRIBUTES.meanReward) ?? null,
  };
}

async function executions(client: Client, query: string): Promise<ListedExecution[]> {
  const out: ListedExecution[] = [];
  for await (const info of client.workflow.list({ query })) out.push(listed(info));
  return out;
}

const TRAINING_PREFIX = trainingWorkflowId('');

/** Every training run the server's visibility knows, newest first (visibility lags by about a second). */
export async function listRuns(client: Client): Promise<RunRow[]> {
  return runRows(await executions(client, `${SEARCH_ATTRIBUTES.kind.name} = 'training'`), TRAINING_PREFIX);
}

/** The run of that name, or null; its name is checked first because it becomes part of a query. */
export async function findRun(client: Client, name: string): Promise<RunRow | null> {
  if (!isValidName(name)) throw new Error(`run name "${name}": not a valid name (${NAME_RULE})`);
  const rows = runRows(await executions(client, `WorkflowId = '${trainingWorkflowId(name)}'`), TRAINING_PREFIX);
  return rows[0] ?? null;
}

/** Every evaluation (by hand, scheduled, or during training), newest first; `run` narrows to one run's. */
export async function listEvaluations(client: Client, run?: string): Promise<EvaluationRow[]> {
  let query = `${SEARCH_ATTRIBUTES.kind.name} = 'evaluation'`;
  if (run !== undefined) {
    if (!isValidName(run)) throw new Error(`run name "${run}": not a valid name (${NAME_RULE})`);
    query += ` AND ${SEARCH_ATTRIBUTES.runName.name} = '${run}'`;
  }
  return evaluationRows(await executions(client, query));
}
