import {
  ApplicationFailure,
  defineQuery,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ResumedTurnInput } from '../activities/dialogueTurn.js';
import type {
  ArtifactActivities,
  DialogueTurnActivities,
  PolicyActivities,
  SimulatorActivities,
} from '../activities/index.js';
import type { ScenarioRef } from '../activities/scenarios.js';
import { Dialogue } from '../core/dialogue.js';
import { emotionAfterTurn } from '../core/emotion.js';
import { playTurn, type DialogueCalls, type TurnPhase } from '../core/dialogueTurn.js';
import type { RetryPolicySettings, RolloutSettings } from '../core/rolloutSettingsSchema.js';
import { DEFAULT_MAX_WAIT_MINUTES, waitingDetails } from '../core/outageWait.js';
import type { Scenario } from '../core/scenario.js';
import type { Outcome } from '../core/termination.js';
import type { RolloutSummary } from '../core/transcript.js';
import { TranscriptPartition } from '../core/transcriptParts.js';
import * as timeline from '../core/rolloutTimeline.js';
import { LIMITS } from '../config/limits.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { summarisedCall } from './summarisedCall.js';
import { endpointName, finishedCallsOf, OutageWait, outageWaitEnabled } from './outageWait.js';

export interface RolloutInput {
  rolloutId: string;
  /** The scenario itself, or a reference loaded by an activity (keeps fan-out parents' histories small). */
  scenario?: Scenario;
  scenarioRef?: ScenarioRef;
  settings: RolloutSettings;
  seed: number;
  runName?: string | null;
  step?: number | null;
}

export interface RolloutProgress {
  turn: number;
  emotion: number;
  emotions: number[];
  outcome: Outcome | null;
  /** `turn`: a turn activity is playing the whole turn (`activityPer: turn`). */
  phase: 'opening' | TurnPhase | 'turn' | 'saving' | 'done';
}

export const rolloutProgressQuery = defineQuery<RolloutProgress>('rolloutProgress');

/** The HTTP timeout plus headroom for queueing in the worker; short enough that a dead worker's call is retried soon. */
function activityTimeoutFor(httpTimeoutMs: number): number {
  return Math.ceil(httpTimeoutMs * 1.25) + 1000;
}

function retryOptions(retry: RetryPolicySettings) {
  return {
    initialInterval: retry.initialIntervalMs,
    backoffCoefficient: retry.backoffCoefficient,
    maximumInterval: retry.maximumIntervalMs,
    // 0 means unlimited: the SDK wants the field left out for that.
    ...(retry.maximumAttempts > 0 ? { maximumAttempts: retry.maximumAttempts } : {}),
    nonRetryableErrorTypes: ['LlmRequestRejected', 'UnparseableSimulatorOutput'],
  };
}

/** Retries of a turn activity: as patient as the more patient of its two endpoints. */
function turnRetry(settings: RolloutSettings): RetryPolicySettings {
  const a = settings.policy.retry;
  const b = settings.simulator.retry;
  return {
    initialIntervalMs: Math.min(a.initialIntervalMs, b.initialIntervalMs),
    backoffCoefficient: Math.max(a.backoffCoefficient, b.backoffCoefficient),
    maximumIntervalMs: Math.max(a.maximumIntervalMs, b.maximumIntervalMs),
    maximumAttempts:
      a.maximumAttempts === 0 || b.maximumAttempts === 0 ? 0 : Math.max(a.maximumAttempts, b.maximumAttempts),
  };
}

function turnActivityProxy(settings: RolloutSettings, local: boolean) {
  const options = {
    // Waits for endpoint slots count against the timeout too; the HTTP timeouts bound each call.
    startToCloseTimeout: LIMITS.turnActivityTimeoutMs,
    retry: retryOptions(turnRetry(settings)),
  };
  if (local) return proxyLocalActivities<DialogueTurnActivities>(options);
  if (!settings.turnsTaskQueue)
    throw ApplicationFailure.nonRetryable(
      'rollout settings with activityPer=turn need turnsTaskQueue',
      'BadRolloutInput',
    );
  // A dead worker is noticed as soon as its single call would be, or within the turn heartbeat timeout.
  const heartbeatTimeout = Math.min(
    LIMITS.turnHeartbeatTimeoutMs,
    activityTimeoutFor(Math.min(settings.policy.timeoutMs, settings.simulator.timeoutMs)),
  );
  return proxyActivities<DialogueTurnActivities>({ ...options, taskQueue: settings.turnsTaskQueue, heartbeatTimeout });
}

/** Rollouts with local LLM calls started after this patch load and save artifacts locally too. */
export const LOCAL_ARTIFACT_ACTIVITIES_PATCH = 'local-artifact-activities';
/** Rollouts started after this patch write a long transcript in parts as it grows. */
export const TRANSCRIPT_PARTS_PATCH = 'transcript-parts';
/** Rollouts started after this patch give each activity a summary for the UI's timeline. */
export const ACTIVITY_SUMMARIES_PATCH = 'activity-summaries';

/**
 * One dialogue between the policy and the simulated user; the transcript goes to the artifact store
 * and only a summary comes back. `settings.activityPer` decides what one activity covers:
 * - `call`: each LLM call (the workflow plays the turn, `playTurn`);
 * - `turn`: a whole turn, the policy's reply and the simulator's analysis and answer, played by
 *   `playDialogueTurn` with the same `playTurn`: a third of the activations and history events,
 *   the turn's calls back to back in one worker, each endpoint bounded in that worker's process.
 * `settings.llmCalls` decides where those activities run:
 * - `activity`: on a task queue (the endpoint's, or the turns queue), so a crash resumes after the
 *   last finished call (a turn activity heartbeats its finished calls), and the LLM workers scale on
 *   their own;
 * - `local`: a local activity in the rollout worker, recorded as a marker when the workflow task
 *   completes. Less CPU and far less server work, but a crash repeats the calls made since the last
 *   completed workflow task (up to 80 % of the workflow-task timeout, 60 s by default for such
 *   rollouts). The scenario load and the transcript write are then local too.
 */
export async function rollout(input: RolloutInput): Promise<RolloutSummary> {
  const { settings, seed } = input;
  const runName = input.runName ?? null;
  const step = input.step ?? null;
  const startedAt = new Date().toISOString();

  const local = settings.llmCalls === 'local';
  // Asked first, so the marker leads the history; recorded histories without it schedule as before.
  const summaries = patched(ACTIVITY_SUMMARIES_PATCH);
  const waitsAtOutage = outageWaitEnabled();
  const policyOptions = {
    startToCloseTimeout: activityTimeoutFor(settings.policy.timeoutMs),
    retry: retryOptions(settings.policy.retry),
  };
  // A call may first wait for its endpoint's slot in the worker (a local call) or for the endpoint's
  // token budget (any call), and those waits count against the activity's timeout; the HTTP timeout
  // inside still bounds the call itself.
  const waitingOptions = <T extends { startToCloseTimeout: number }>(options: T): T => ({
    ...options,
    startToCloseTimeout: Math.max(options.startToCloseTimeout, LIMITS.llmCallTimeoutMs),
  });
  // A queued call heartbeats while it waits: a dead worker's call moves on in seconds.
  const queuedCallOptions = { heartbeatTimeout: LIMITS.llmCallHeartbeatTimeoutMs };
  const policy = local
    ? proxyLocalActivities<PolicyActivities>(waitingOptions(policyOptions))
    : proxyActivities<PolicyActivities>({
        ...waitingOptions(policyOptions),
        ...queuedCallOptions,
        taskQueue: settings.policy.taskQueue,
      });
  const simulatorOptions = {
    // The analysis activity may ask again after an unparseable answer, within one attempt.
    startToCloseTimeout: activityTimeoutFor(settings.simulator.timeoutMs) * (settings.simulator.parseRetries + 1),
    retry: retryOptions(settings.simulator.retry),
  };
  const simulator = local
    ? proxyLocalActivities<SimulatorActivities>(waitingOptions(simulatorOptions))
    : proxyActivities<SimulatorActivities>({
        ...waitingOptions(simulatorOptions),
        ...queuedCallOptions,
        taskQueue: settings.simulator.taskQueue,
      });
  const turnActivity = settings.activityPer === 'turn' ? turnActivityProxy(settings, local) : null;
  // A store out of reach past these retries makes the write wait for the operator (the gate below).
  const artifactRetry = settings.artifactStore?.retry;
  const artifactOptions = {
    startToCloseTimeout: LIMITS.artifactActivityTimeoutMs,
    retry: artifactRetry ? retryOptions(artifactRetry) : { maximumAttempts: 10 },
  };
  // With local LLM calls the scenario load and the transcript write run as local activities too:
  // the rollout worker hosts them anyway, and each saves a dialogue two server round trips (the
  // patch keeps rollouts started before this change replaying their artifact activities).
  const artifacts =
    local && patched(LOCAL_ARTIFACT_ACTIVITIES_PATCH)
      ? proxyLocalActivities<ArtifactActivities>(artifactOptions)
      : proxyActivities<ArtifactActivities>({ ...artifactOptions, taskQueue: settings.artifactsTaskQueue });

  /** The summary when this rollout gives summaries (see ACTIVITY_SUMMARIES_PATCH). */
  const say = (text: () => string) => () => (summaries ? text() : undefined);

  let scenario: Scenario;
  if (input.scenario) scenario = input.scenario;
  else if (input.scenarioRef) {
    const ref = input.scenarioRef;
    scenario = await summarisedCall(
      artifacts.loadScenario,
      say(() => timeline.scenarioLoadSummary(ref.id)),
    )(ref);
  } else throw ApplicationFailure.nonRetryable('rollout input needs scenario or scenarioRef', 'BadRolloutInput');

  const dialogue = new Dialogue({ settings, scenario, seed });
  const progress: RolloutProgress = {
    turn: 0,
    emotion: settings.initialEmotion,
    emotions: dialogue.emotions,
    outcome: null,
    phase: 'opening',
  };
  setHandler(rolloutProgressQuery, () => progress);
  const maxWaitMinutes = settings.maxWaitMinutes ?? DEFAULT_MAX_WAIT_MINUTES;
  const showDetails = () => {
    const details = timeline.rolloutDetails({ scenarioId: scenario.id, maxTurns: settings.maxTurns, ...progress });
    if (gate.waiting) setCurrentDetails(`${waitingDetails(gate.waiting, maxWaitMinutes)}\n\n${details}`);
    else if (summaries) setCurrentDetails(details);
  };
  const gate = new OutageWait({
    enabled: waitsAtOutage,
    rolloutId: input.rolloutId,
    maxWaitMinutes,
    onChange: showDetails,
  });
  const policyAt = endpointName(settings.policy);
  const simulatorAt = endpointName(settings.simulator);
  const storeAt = settings.artifactStore?.name ?? 'the artifact store';
  /** A call that waits for an operator when its endpoint stays down; `call` names it in the details. */
  const waitable = <A extends unknown[], R>(fn: (...args: A) => Promise<R>, call: () => string, endpoint: string) =>
    gate.guard(fn, () => ({ call: call(), endpoint }));
  showDetails();
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'rollout' },
    { key: SEARCH_ATTRIBUTES.scenarioId, value: scenario.id },
    ...(runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: runName }] : []),
    ...(step !== null ? [{ key: SEARCH_ATTRIBUTES.step, value: step }] : []),
  ]);

  await dialogue.open(
    waitable(
      summarisedCall(simulator.writeUserMessage, say(timeline.openingSummary)),
      timeline.openingSummary,
      simulatorAt,
    ),
  );
  // Per call, the workflow plays the turn itself and each call is an activity; per turn, one activity plays it.
  // (Activity proxies have no own keys to spread: each function is looked up by name.)
  let emotionAfterAnalysis = progress.emotion;
  const analysisSummary = () => timeline.analysisSummary(progress.turn, progress.emotion);
  const analyse = waitable(
    summarisedCall(simulator.analyzeAssistantReply, say(analysisSummary)),
    analysisSummary,
    simulatorAt,
  );
  const policyReplySummary = () => timeline.policyReplySummary(progress.turn);
  const userReplySummary = () => timeline.userReplySummary(progress.turn, progress.emotion, emotionAfterAnalysis);
  const callsOfTurn: DialogueCalls = {
    generatePolicyTurn: waitable(
      summarisedCall(policy.generatePolicyTurn, say(policyReplySummary)),
      policyReplySummary,
      policyAt,
    ),
    analyzeAssistantReply: async (callInput) => {
      const analysed = await analyse(callInput);
      emotionAfterAnalysis = emotionAfterTurn(progress.emotion, analysed.analysis.emotionChange);
      return analysed;
    },
    writeUserMessage: waitable(
      summarisedCall(simulator.writeUserMessage, say(userReplySummary)),
      userReplySummary,
      simulatorAt,
    ),
  };
  const onPhase = (phase: TurnPhase) => {
    progress.phase = phase;
    showDetails();
  };
  const rolloutId = input.rolloutId;
  // A transcript is written in parts as it grows, so no payload ever carries all of it.
  const partition = new TranscriptPartition({ runName, rolloutId });
  const ended = await dialogue.playToEnd(
    async (turnInput) => {
      let played;
      if (turnActivity) {
        progress.phase = 'turn';
        showDetails();
        // A turn waits as a whole; going on plays it again after the calls its failure says it finished.
        const turnSummary = () => timeline.wholeTurnSummary(turnInput.turn, turnInput.emotion);
        played = await gate.guard(
          summarisedCall(turnActivity.playDialogueTurn, say(turnSummary)),
          () => ({ call: turnSummary(), endpoint: `${policyAt}, ${simulatorAt}` }),
          (error, [playedFrom]): [ResumedTurnInput] => [
            { ...playedFrom, finished: finishedCallsOf(error) ?? playedFrom.finished },
          ],
        )(turnInput);
      } else played = await playTurn(callsOfTurn, turnInput, onPhase);
      if (partition.add(played.record) && patched(TRANSCRIPT_PARTS_PATCH)) {
        const partSummary = () => timeline.transcriptPartSummary(played.record.turn);
        await waitable(
          summarisedCall(artifacts.saveTranscriptPart, say(partSummary)),
          partSummary,
          storeAt,
        )(partition.takePart());
      }
      return played;
    },
    {
      beforeTurn: (turnInput) => {
        progress.turn = turnInput.turn;
      },
      afterTurn: () => {
        progress.emotion = dialogue.emotion;
        showDetails();
      },
    },
  );

  const { outcome, emotion: finalEmotion } = ended;
  progress.outcome = outcome;
  progress.phase = 'saving';
  showDetails();
  const transcript = ended.transcript({ rolloutId, runName, step, startedAt, finishedAt: new Date().toISOString() });
  const { reward, tokens } = transcript;
  const savedSummary = () => timeline.transcriptSummary(transcript.turns.length, outcome, finalEmotion);
  const saved = say(savedSummary);
  const artifact =
    partition.parts === 0
      ? await waitable(summarisedCall(artifacts.saveTranscript, saved), savedSummary, storeAt)(transcript)
      : await waitable(
          summarisedCall(artifacts.saveTranscriptFromParts, saved),
          savedSummary,
          storeAt,
        )(partition.tail(transcript));
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.outcome, value: outcome },
    { key: SEARCH_ATTRIBUTES.finalEmotion, value: finalEmotion },
  ]);
  progress.phase = 'done';
  showDetails();
  return {
    rolloutId,
    runName,
    step,
    scenarioId: scenario.id,
    goalType: scenario.goalType,
    personality: scenario.personality,
    policyModel: settings.policy.model,
    outcome,
    finalEmotion,
    reward,
    turns: transcript.turns.length,
    emotions: dialogue.emotions,
    tokens,
    artifact,
  };
}

/**
 * With worker versioning a dialogue ends on the build it started on: it lasts minutes, so the old
 * build drains soon, and a rollout's code changes then need no `patched()` to move mid-dialogue.
 * Training and evaluation workflows take the worker's default, AUTO_UPGRADE. Only a versioned
 * worker (one with a deployment name) may say so: the server fails the workflow tasks of an
 * unversioned worker that names a behaviour.
 */
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {}),
  rollout,
);
