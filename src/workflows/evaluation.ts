import {
  defineQuery,
  executeChild,
  patched,
  proxyActivities,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { RolloutQueueActivities } from '../activities/index.js';
import {
  evaluationReportCounts,
  entryFromSummary,
  type EvaluationEntry,
  type EvaluationReport,
} from '../core/evaluationReport.js';
import { dialogueSettingsOf } from '../core/dialogueKeys.js';
import { evaluationManifest, servedRewardEnvironment } from '../core/evaluationManifest.js';
import { heldOutDialogueId, planEvaluationDialogues, type PlannedDialogue as Planned } from '../core/evaluationPlan.js';
import type { EvaluationInput, EvaluationScenario } from '../core/evaluationInput.js';
import type { RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { simulatorScores, TRAINING_SIMULATOR, type SimulatorScore } from '../core/simulatorScores.js';
import type { RolloutSummary } from '../core/transcript.js';
import { rolloutStartOptions } from '../core/rolloutStart.js';
import type { RolloutProgressCounts } from '../core/training/trainingState.js';
import { LIMITS } from '../config/limits.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { boundedFanOut, counted, failureMessage } from './fanOut.js';
import { rollout } from './rollout.js';
import type { ServedModel } from '../core/servedModel.js';
import { DialogueWaits } from './dialogueWaits.js';

/** Evaluations started after this patch ask the simulator's endpoint what it serves, for their manifest. */
export const SERVED_SIMULATOR_PATCH = 'manifest-served-simulator';

/** Evaluations started after this patch play their dialogues again with each held-out simulator. */
export const HELD_OUT_SIMULATORS_PATCH = 'evaluation-held-out-simulators';

/** What an evaluation returns to its parent: the headline numbers; the report stays in the artifact store. */
export type EvaluationSummary = Pick<
  EvaluationReport,
  'evalId' | 'score' | 'success' | 'failure' | 'count' | 'failed' | 'meanTurns' | 'policyModel'
> & {
  artifact: string;
  /** Each simulator's headline numbers, the training simulator's first; absent without held-out simulators. */
  simulators?: Pick<SimulatorScore, 'name' | 'score' | 'count' | 'failed' | 'gap'>[];
};

/** The evaluation's dialogues: planned, finished, failed, and running now. */
export type EvaluationProgress = RolloutProgressCounts;

/** Answered from the workflow's memory: a query adds no event, so recorded histories replay as before. */
export const evaluationProgressQuery = defineQuery<EvaluationProgress>('evaluationProgress');

type PlannedDialogue = Planned<EvaluationScenario>;

/** Each dialogue's entry in the report: its summary, or why it failed. */
function entriesOf(
  dialogues: readonly PlannedDialogue[],
  outcomes: readonly ({ ok: true; value: RolloutSummary } | { ok: false; error: unknown })[],
): EvaluationEntry[] {
  return outcomes.map((outcome, i) => {
    const { scenario, repeat, seed } = dialogues[i]!;
    const entry: EvaluationEntry = outcome.ok
      ? entryFromSummary(outcome.value)
      : {
          status: 'failed',
          scenarioId: scenario.id,
          goalType: scenario.goalType,
          personality: scenario.personality,
          error: failureMessage(outcome.error),
        };
    return { ...entry, repeat, seed };
  });
}

function evaluationReportOf(
  input: EvaluationInput,
  dialogues: readonly PlannedDialogue[],
  results: EvaluationEntry[],
  served: ServedModel | undefined,
  heldOut: readonly HeldOutPass[],
): ReturnType<typeof evaluationReportCounts> {
  const repeats = input.repeats ?? 1;
  return evaluationReportCounts({
    evalId: input.evalId,
    createdAt: new Date().toISOString(),
    policyModel: input.settings.policy.model,
    simulatorModel: input.settings.simulator.model,
    scenarios: input.source,
    settings: {
      ...dialogueSettingsOf(input.settings),
      simulatorTemperature: input.settings.simulator.temperature,
    },
    results,
    runName: input.runName ?? null,
    step: input.step ?? null,
    repeats,
    manifest: evaluationManifest(
      input.settings,
      {
        base: input.seed,
        repeats,
        dialogues: dialogues.map((d) => ({ scenarioId: d.scenario.id, seed: d.seed })),
      },
      Object.fromEntries(
        results.flatMap((r) => (r.status === 'ok' && r.scenarioHash ? [[r.scenarioId, r.scenarioHash]] : [])),
      ),
      served,
    ),
    ...(heldOut.length > 0
      ? {
          simulators: simulatorScores(
            { name: TRAINING_SIMULATOR, environment: servedRewardEnvironment(input.settings, served), results },
            heldOut.map((pass) => ({
              name: pass.name,
              environment: servedRewardEnvironment(pass.settings, pass.served),
              results: pass.results,
            })),
          ),
        }
      : {}),
  });
}

/** A held-out simulator's pass: its settings (the evaluation's, with its simulator), what it serves, its dialogues. */
interface HeldOutPass {
  name: string;
  settings: RolloutSettings;
  served: ServedModel | undefined;
  results: EvaluationEntry[];
}

/**
 * Each simulator's pass over the dialogues: the training simulator's (the dialogues as planned), then
 * each held-out simulator's, the same dialogues with its simulator, their ids naming it.
 */
function simulatorPasses(input: EvaluationInput, dialogues: PlannedDialogue[]) {
  // Histories recorded before held-out simulators had none: nothing new is asked of them.
  const heldOut =
    (input.simulators ?? []).length > 0 && patched(HELD_OUT_SIMULATORS_PATCH) ? (input.simulators ?? []) : [];
  return [
    { name: TRAINING_SIMULATOR, settings: input.settings, dialogues },
    ...heldOut.map(({ name, simulator }) => ({
      name,
      settings: { ...input.settings, simulator },
      dialogues: dialogues.map((d) => ({ ...d, rolloutId: heldOutDialogueId(d.rolloutId, name) })),
    })),
  ];
}

function summaryOf(report: ReturnType<typeof evaluationReportCounts>, artifact: string): EvaluationSummary {
  return {
    evalId: report.evalId,
    score: report.score,
    success: report.success,
    failure: report.failure,
    count: report.count,
    failed: report.failed,
    meanTurns: report.meanTurns,
    policyModel: report.policyModel,
    artifact,
    ...(report.simulators
      ? {
          simulators: report.simulators.map(({ name, score, count, failed, gap }) => ({
            name,
            score,
            count,
            failed,
            gap,
          })),
        }
      : {}),
  };
}

/**
 * A benchmark over a set of scenarios: one rollout child per scenario and repeat, with bounded
 * concurrency. A failed dialogue is reported and excluded from the score; it does not sink the
 * evaluation. Without repeats the children, their ids and their seeds are those of one dialogue
 * per scenario, as before repeats existed. Each held-out simulator plays the same dialogues again
 * (same policy settings, same seeds; ids ending `--simulator=NAME`) after the training simulator's,
 * and the report scores each simulator.
 */
export async function evaluation(input: EvaluationInput): Promise<EvaluationSummary> {
  const activities = proxyActivities<RolloutQueueActivities>({
    taskQueue: input.settings.artifactsTaskQueue,
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    retry: { maximumAttempts: 10 },
  });
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'evaluation' },
    ...(input.runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: input.runName }] : []),
    ...(input.step !== undefined && input.step !== null ? [{ key: SEARCH_ATTRIBUTES.step, value: input.step }] : []),
  ]);
  const repeats = input.repeats ?? 1;
  const { baseURL, model, apiKeyEnv } = input.settings.simulator;
  const dialogues = planEvaluationDialogues(input.evalId, input.scenarios, input.seed, repeats);
  const passes = simulatorPasses(input, dialogues);
  const played = passes.flatMap((pass) => pass.dialogues.map((dialogue) => ({ dialogue, settings: pass.settings })));
  const progress: EvaluationProgress = { total: played.length, done: 0, failed: 0, inFlight: 0 };
  // Before the first await: `attune eval` queries progress from the start, and an unregistered query fails.
  setHandler(evaluationProgressQuery, () => progress);
  const served = patched(SERVED_SIMULATOR_PATCH)
    ? await activities.describeServedModel({ baseURL, model, apiKeyEnv })
    : undefined;
  const heldOutServed: ServedModel[] = [];
  for (const { settings } of passes.slice(1))
    heldOutServed.push(
      await activities.describeServedModel({
        baseURL: settings.simulator.baseURL,
        model: settings.simulator.model,
        apiKeyEnv: settings.simulator.apiKeyEnv,
      }),
    );
  // Dialogues waiting at a failed call are counted here and reported to the training run, if any, whose resume continues them.
  const waits = new DialogueWaits(() => {
    progress.waiting = waits.count;
  }, true);
  const outcomes = await boundedFanOut(played, input.concurrency, ({ dialogue, settings }) =>
    counted(progress, () =>
      executeChild(rollout, {
        ...rolloutStartOptions(settings),
        workflowId: dialogue.rolloutId,
        taskQueue: workflowInfo().taskQueue,
        args: [
          {
            rolloutId: dialogue.rolloutId,
            scenarioRef: { dir: input.scenarioDir, id: dialogue.scenario.id },
            settings,
            // Per-dialogue seeds: the same evaluation id and seed reproduce the same requests.
            seed: dialogue.seed,
            runName: input.runName ?? input.evalId,
            step: input.step ?? null,
          },
        ],
      }),
    ),
  );
  // Outcomes are in the order of `played`: each pass's dialogues together, the training simulator's first.
  const passOutcomes = passes.map((pass, i) => outcomes.slice(i * dialogues.length, (i + 1) * dialogues.length));
  const heldOut = passes.slice(1).map((pass, i) => ({
    name: pass.name,
    settings: pass.settings,
    served: heldOutServed[i],
    results: entriesOf(pass.dialogues, passOutcomes[i + 1]!),
  }));
  const report = evaluationReportOf(input, dialogues, entriesOf(dialogues, passOutcomes[0]!), served, heldOut);
  const artifact = await activities.saveEvaluation(report);
  upsertSearchAttributes([{ key: SEARCH_ATTRIBUTES.meanReward, value: report.score / 100 }]);
  return summaryOf(report, artifact);
}
