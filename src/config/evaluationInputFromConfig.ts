import { resolve } from 'node:path';
import { nameProblem } from '../core/names.js';
import { requireScenarioLibrary } from '../scenarios/library.js';
import type { EvaluationInput } from '../core/evaluationInput.js';
import { rolloutSettingsFromConfig } from './rolloutSettingsFromConfig.js';
import type { AttuneConfig } from './schema.js';

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
  const dialogue = { ...e.dialogue, think: e.dialogue.think ?? config.rollout.dialogue.think };
  const settings = rolloutSettingsFromConfig(
    { ...withPolicy, simulator: { ...withPolicy.simulator, temperature: e.simulatorTemperature } },
    dialogue,
  );
  // A held-out simulator's call is built as the training simulator's is, from its own endpoint.
  const simulators = e.simulators.map(({ name, ...endpoint }) => ({
    name,
    simulator: rolloutSettingsFromConfig(
      {
        ...withPolicy,
        // Its calls run on the simulator's queue, within the simulator's worker limits.
        simulator: {
          ...endpoint,
          difficulty: withPolicy.simulator.difficulty,
          maxConcurrency: withPolicy.simulator.maxConcurrency,
          temperature: endpoint.temperature ?? e.simulatorTemperature,
        },
      },
      dialogue,
    ).simulator,
  }));
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
    ...(simulators.length > 0 ? { simulators } : {}),
  };
}
