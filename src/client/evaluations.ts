import { resolve } from 'node:path';
import { WorkflowExecutionAlreadyStartedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { rolloutSettingsFromConfig } from '../config/rolloutSettingsFromConfig.js';
import type { AttuneConfig } from '../config/schema.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import { nameProblem } from '../core/names.js';
import { requireScenarioLibrary } from '../scenarios/library.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { evaluation, type EvaluationInput } from '../workflows/evaluation.js';

export interface EvaluationRequest {
  /** A scenario directory, or a split name of the config (`eval`, `train`). */
  scenarios?: string;
  split?: 'eval' | 'train';
  /** A policy version such as `run@12`: sampled from the trainer (or trainer.policyBaseURL). */
  policy?: string;
  evalId?: string;
  runName?: string | null;
  step?: number | null;
  /** Only these scenario ids (in this order); default all. */
  only?: string[];
  /** Dialogues per scenario (simulator seeds); default evaluation.repeats. */
  repeats?: number;
}

export function policyBaseUrlForVersions(config: AttuneConfig): string {
  return config.trainer.policyBaseURL ?? `${config.trainer.url.replace(/\/$/, '')}/v1`;
}

/** Builds the evaluation workflow's input on the client: scenarios are checked here, once, with clear errors. */
export function buildEvaluationInput(config: AttuneConfig, request: EvaluationRequest): EvaluationInput {
  // An evaluation's name is its workflow id, its report folder and, outside a run, its transcripts' run name.
  const nameIssue = request.evalId !== undefined ? nameProblem(request.evalId) : null;
  if (nameIssue !== null) throw new Error(`evaluation name "${request.evalId}": ${nameIssue}`);
  for (const [i, id] of (request.only ?? []).entries()) {
    const idIssue = nameProblem(id, 'scenario id');
    if (idIssue !== null) throw new Error(`scenario id "${id}": ${idIssue}`);
    // Each scenario's dialogue is the workflow `<eval>--<scenario>`: a repeated id would start one twice.
    if (request.only?.indexOf(id) !== i) throw new Error(`scenario id "${id}" is listed twice`);
  }
  const dir = request.scenarios ?? (request.split === 'train' ? config.scenarios.train : config.scenarios.eval);
  const library = requireScenarioLibrary(dir);
  let chosen = library;
  if (request.only && request.only.length > 0) {
    chosen = request.only.map((id) => {
      const found = library.find((s) => s.id === id);
      if (!found) throw new Error(`scenario "${id}" not found in ${dir}`);
      return found;
    });
  }
  if (chosen.length === 0) throw new Error(`no scenarios in ${dir}`);
  const e = config.evaluation;
  const withPolicy: AttuneConfig = request.policy
    ? { ...config, policy: { ...config.policy, baseURL: policyBaseUrlForVersions(config), model: request.policy } }
    : config;
  const settings = rolloutSettingsFromConfig(
    { ...withPolicy, simulator: { ...withPolicy.simulator, temperature: e.simulatorTemperature } },
    { initialEmotion: e.initialEmotion, maxTurns: e.maxTurns, think: e.think ?? config.rollout.think },
  );
  const evalId = request.evalId ?? `eval-${new Date().toISOString().replace(/[:.]/g, '-').replace(/Z$/, '')}`;
  return {
    evalId,
    scenarioDir: resolve(dir),
    scenarios: chosen.map((s) => ({ id: s.id, goalType: s.goalType, personality: s.personality })),
    source: request.scenarios ?? `${request.split ?? 'eval'} split (${dir})`,
    settings,
    seed: e.seed,
    repeats: request.repeats ?? e.repeats,
    concurrency: e.concurrency,
    runName: request.runName ?? null,
    step: request.step ?? null,
  };
}

export async function startEvaluation(client: Client, config: AttuneConfig, input: EvaluationInput) {
  return client.workflow.start(evaluation, {
    taskQueue: taskQueuesFor(config.temporal.taskQueuePrefix).rollouts,
    workflowId: input.evalId,
    args: [input],
    // A finished evaluation of this id is attached to (its report), never run again.
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
    typedSearchAttributes: [
      { key: SEARCH_ATTRIBUTES.kind, value: 'evaluation' },
      ...(input.runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: input.runName }] : []),
    ],
  });
}

/** Starts the evaluation, or attaches to the one with that id: an evaluation id is never run twice. */
export async function startOrAttachEvaluation(
  client: Client,
  config: AttuneConfig,
  input: EvaluationInput,
): Promise<{ handle: WorkflowHandle<typeof evaluation>; attached: boolean }> {
  try {
    return { handle: await startEvaluation(client, config, input), attached: false };
  } catch (error) {
    if (error instanceof WorkflowExecutionAlreadyStartedError)
      return { handle: client.workflow.getHandle<typeof evaluation>(input.evalId), attached: true };
    throw error;
  }
}
