import { patched, setWorkflowOptions, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { ResumedTurnInput } from '../activities/dialogueTurn.js';
import type {
  ArtifactActivities,
  DialogueTurnActivities,
  PolicyActivities,
  SimulatorActivities,
} from '../activities/index.js';
import type { ScenarioRef } from '../activities/scenarios.js';
import type { AttemptFence } from '../journal/turnJournal.js';
import {
  OPENING_JOURNALLED_PATCH,
  TURN_JOURNAL_FORGOTTEN_PATCH,
  TURN_JOURNAL_SWEPT_PATCH,
} from '../journal/journalPatches.js';
import { Dialogue, type EndedDialogue, type TurnHooks } from '../core/dialogue.js';
import { emotionAfterTurn } from '../core/emotion.js';
import {
  playTurn,
  withPrompt,
  type DialogueCalls,
  type PlayedTurn,
  type TurnFailurePoint,
  type TurnInput,
} from '../core/dialogueTurn.js';
import type { RolloutSettings } from '../core/rolloutSettingsSchema.js';
import type { Scenario } from '../core/scenario.js';
import type { RolloutSummary } from '../core/transcript.js';
import { TranscriptPartition } from '../core/transcriptParts.js';
import * as timeline from '../core/rolloutTimeline.js';
import { SEARCH_ATTRIBUTES } from '../temporal/searchAttributes.js';
import { summarisedCall } from './summarisedCall.js';
import { reportingEnd } from './dialogueFinished.js';
import { endpointName, failedCallOf, finishedCallsOf, outageWaitEnabled } from './outageWait.js';
import {
  artifactActivities,
  llmCallActivities,
  queuedArtifactActivities,
  scenarioOf,
  turnActivities,
  type ActivityProxy,
} from './rolloutActivities.js';
import { scenarioHash } from '../core/scenarioHash.js';
import { answerProgressWhileLoading, RolloutView, sayWhen } from './rolloutView.js';

export { LOCAL_ARTIFACT_ACTIVITIES_PATCH } from './rolloutActivities.js';
export { rolloutProgressQuery, type RolloutProgress } from './rolloutView.js';

export interface RolloutInput {
  rolloutId: string;
  /** The scenario itself, or a reference loaded by an activity (keeps fan-out parents' histories small). */
  scenario?: Scenario;
  scenarioRef?: ScenarioRef;
  settings: RolloutSettings;
  seed: number;
  runName?: string | null;
  step?: number | null;
  /** The training workflow to signal the dialogue's end to (steps that take the first finished; see dialogueFinished.ts). */
  reportTo?: string;
}

/** Rollouts started after this patch write a long transcript in parts as it grows. */
export const TRANSCRIPT_PARTS_PATCH = 'transcript-parts';
/** Rollouts started after this patch give each activity a summary for the UI's timeline. */
export const ACTIVITY_SUMMARIES_PATCH = 'activity-summaries';

/** Where the rollout's calls go, as the details and the waits name them. */
interface Endpoints {
  policy: string;
  simulator: string;
  store: string;
}

type PlayOneTurn = (turnInput: TurnInput) => Promise<PlayedTurn>;

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
  return reportingEnd(input.rolloutId, input.reportTo, () => playRollout(input));
}

async function playRollout(input: RolloutInput): Promise<RolloutSummary> {
  const { settings, rolloutId } = input;
  const runName = input.runName ?? null;
  const step = input.step ?? null;
  const startedAt = new Date().toISOString();
  const local = settings.llmCalls === 'local';
  // Asked first, so the marker leads the history; recorded histories without it schedule as before.
  const summaries = patched(ACTIVITY_SUMMARIES_PATCH);
  const waitsAtOutage = outageWaitEnabled();
  const { policy, simulator } = llmCallActivities(settings, local);
  const turnActivity = settings.activityPer === 'turn' ? turnActivities(settings, local) : null;
  const artifacts = artifactActivities(settings, local);
  answerProgressWhileLoading(settings);
  const scenario = await scenarioOf(input, artifacts, sayWhen(summaries));

  const dialogue = new Dialogue({ settings, scenario, seed: input.seed });
  const view = new RolloutView({
    rolloutId,
    settings,
    scenarioId: scenario.id,
    summaries,
    waitsAtOutage,
    emotions: dialogue.emotions,
  });
  const at: Endpoints = {
    policy: endpointName(settings.policy),
    simulator: endpointName(settings.simulator),
    store: settings.artifactStore?.name ?? 'the artifact store',
  };
  view.show();
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.kind, value: 'rollout' },
    { key: SEARCH_ATTRIBUTES.scenarioId, value: scenario.id },
    ...(runName ? [{ key: SEARCH_ATTRIBUTES.runName, value: runName }] : []),
    ...(step !== null ? [{ key: SEARCH_ATTRIBUTES.step, value: step }] : []),
  ]);

  const opening = view.say(timeline.openingSummary);
  await dialogue.open(
    turnActivity && local
      ? // Waits at the simulator's call, or at the store when its journal failed.
        view.gate.guard(journalledOpening(turnActivity, simulator, scenario, opening), (error) =>
          failedCallOf(error) === 'journal'
            ? { call: timeline.openingJournalSummary(), endpoint: at.store }
            : { call: timeline.openingSummary(), endpoint: at.simulator },
        )
      : view.waitable(summarisedCall(simulator.writeUserMessage, opening), timeline.openingSummary, at.simulator),
  );
  const playOne = turnActivity ? turnByActivity(turnActivity, view, at) : turnByCalls(policy, simulator, view, at);
  // A transcript is written in parts as it grows, so no payload ever carries all of it.
  const partition = new TranscriptPartition({ runName, rolloutId });
  const ended = await dialogue.playToEnd(
    async (turnInput) => {
      const played = await playOne(turnInput);
      await savePartWhenDue(partition, played, artifacts, view, at.store);
      return played;
    },
    progressHooks(view, dialogue),
  );

  if (turnActivity && local) await forgetTurnJournal(settings);
  const transcript = await saveEnded(ended, partition, artifacts, view, at.store, {
    rolloutId,
    runName,
    step,
    startedAt,
  });
  return {
    rolloutId,
    runName,
    step,
    scenarioId: scenario.id,
    scenarioHash: scenarioHash(scenario),
    goalType: scenario.goalType,
    personality: scenario.personality,
    policyModel: settings.policy.model,
    outcome: ended.outcome,
    finalEmotion: ended.emotion,
    reward: transcript.reward,
    turns: transcript.turns,
    emotions: dialogue.emotions,
    tokens: transcript.tokens,
    artifact: transcript.artifact,
  };
}

/**
 * The opening with local turns: journalled as turn 0 by the turn activities' worker. Its result
 * reaches the history only when the workflow task completes, tens of seconds later; a worker that
 * died before then must not leave the next one to write a different opening under turn 1's
 * journalled reply. The patch is asked only when the simulator writes the opening (no `firstMessage`),
 * so histories of other rollouts keep their markers.
 */
function journalledOpening(
  turnActivity: ActivityProxy<DialogueTurnActivities>,
  simulator: ActivityProxy<SimulatorActivities>,
  scenario: Scenario,
  say: () => string | undefined,
): DialogueCalls['writeUserMessage'] {
  const journalled = summarisedCall(turnActivity.playDialogueOpening, say);
  const plain = summarisedCall(simulator.writeUserMessage, say);
  return (callInput) =>
    patched(OPENING_JOURNALLED_PATCH)
      ? journalled(fenced({ ...callInput, scenarioId: scenario.id, scenarioHash: scenarioHash(scenario) }))
      : plain(callInput);
}

/**
 * Per call: the workflow plays the turn itself and each call is an activity.
 * (Activity proxies have no own keys to spread: each function is looked up by name.)
 */
function turnByCalls(
  policy: ActivityProxy<PolicyActivities>,
  simulator: ActivityProxy<SimulatorActivities>,
  view: RolloutView,
  at: Endpoints,
): PlayOneTurn {
  const { progress, say } = view;
  let emotionAfterAnalysis = progress.emotion;
  const analysisSummary = () => timeline.analysisSummary(progress.turn, progress.emotion);
  const analyse = view.waitable(
    summarisedCall(simulator.analyzeAssistantReply, say(analysisSummary)),
    analysisSummary,
    at.simulator,
  );
  const policyReplySummary = () => timeline.policyReplySummary(progress.turn);
  const userReplySummary = () => timeline.userReplySummary(progress.turn, progress.emotion, emotionAfterAnalysis);
  const callsOfTurn: DialogueCalls = {
    generatePolicyTurn: view.waitable(
      summarisedCall(policy.generatePolicyTurn, say(policyReplySummary)),
      policyReplySummary,
      at.policy,
    ),
    analyzeAssistantReply: async (callInput) => {
      const analysed = await analyse(callInput);
      emotionAfterAnalysis = emotionAfterTurn(progress.emotion, analysed.analysis.emotionChange);
      return analysed;
    },
    writeUserMessage: view.waitable(
      summarisedCall(simulator.writeUserMessage, say(userReplySummary)),
      userReplySummary,
      at.simulator,
    ),
  };
  return (turnInput) => playTurn(callsOfTurn, turnInput, (phase) => view.enter(phase));
}

/**
 * A turn activity's input with its fence: the history length of the workflow task that schedules it,
 * then that task attempt's start, which order its attempts (AttemptFence) so a stale worker's attempt
 * cannot claim the turn from a newer one. Not part of the input's hash: it says when the attempt was
 * made, not what from.
 */
const fenced = <T extends object>(input: T): T & AttemptFence => ({
  ...input,
  fence: workflowInfo().historyLength,
  // Workflow time: this task attempt's start, which orders two attempts of a task that timed out.
  fenceAt: Date.now(),
});

/** Per turn: one activity plays the whole turn. */
function turnByActivity(
  turnActivity: ActivityProxy<DialogueTurnActivities>,
  view: RolloutView,
  at: Endpoints,
): PlayOneTurn {
  return async (turnInput) => {
    view.enter('turn');
    // A turn waits as a whole; going on plays it again after the calls its failure says it finished.
    const turnSummary = () => timeline.wholeTurnSummary(turnInput.turn, turnInput.emotion);
    const play = summarisedCall(turnActivity.playDialogueTurn, view.say(turnSummary));
    const played = await view.gate.guard(
      (input: ResumedTurnInput) => play(fenced(input)),
      (error) => waitingCallInTurn(failedCallOf(error), turnInput, at),
      (error, [playedFrom]): [ResumedTurnInput] => [
        { ...playedFrom, finished: finishedCallsOf(error) ?? playedFrom.finished },
      ],
    )(turnInput);
    return withPrompt(played, turnInput);
  };
}

/** Where a turn activity's dialogue waits: the call (or journal) its failure names, or the whole turn (a worker that names none). */
function waitingCallInTurn(
  failedAt: TurnFailurePoint | undefined,
  { turn, emotion }: TurnInput,
  at: Endpoints,
): { call: string; endpoint: string } {
  switch (failedAt) {
    case 'policy':
      return { call: timeline.policyReplySummary(turn), endpoint: at.policy };
    case 'analysis':
      return { call: timeline.analysisSummary(turn, emotion), endpoint: at.simulator };
    case 'reply':
      return { call: timeline.userReplyInTurnSummary(turn), endpoint: at.simulator };
    case 'journal':
      return { call: timeline.turnJournalSummary(turn), endpoint: at.store };
    default:
      return { call: timeline.wholeTurnSummary(turn, emotion), endpoint: `${at.policy}, ${at.simulator}` };
  }
}

function progressHooks(view: RolloutView, dialogue: Dialogue): TurnHooks {
  return {
    beforeTurn: (turnInput) => {
      view.progress.turn = turnInput.turn;
    },
    afterTurn: () => {
      view.progress.emotion = dialogue.emotion;
      view.show();
    },
  };
}

/** Writes the transcript's next part once enough turns have gathered (rollouts with TRANSCRIPT_PARTS_PATCH). */
async function savePartWhenDue(
  partition: TranscriptPartition,
  played: PlayedTurn,
  artifacts: ActivityProxy<ArtifactActivities>,
  view: RolloutView,
  storeAt: string,
): Promise<void> {
  if (!(partition.add(played.record) && patched(TRANSCRIPT_PARTS_PATCH))) return;
  const partSummary = () => timeline.transcriptPartSummary(played.record.turn);
  await view.waitable(
    summarisedCall(artifacts.saveTranscriptPart, view.say(partSummary)),
    partSummary,
    storeAt,
  )(partition.takePart());
}

/**
 * Local turns journal their finished calls (src/journal/turnJournal.ts) because their markers
 * reach the history only when a workflow task completes, at the latest with the rollout's
 * completion. The journal may go only after that, so the rollout leaves it to its worker's sweeper
 * (src/journal/turnJournalSweeper.ts), which removes it once the server says the run is closed.
 * Rollouts started before TURN_JOURNAL_SWEPT_PATCH removed it themselves, in an activity on the
 * rollouts queue (scheduling it completed the open workflow task, so the turns were in the history
 * first): at 256 dialogues ending together, those 256 queued activities cost the step ~2 s.
 */
async function forgetTurnJournal(settings: RolloutSettings): Promise<void> {
  if (patched(TURN_JOURNAL_SWEPT_PATCH)) return;
  if (!patched(TURN_JOURNAL_FORGOTTEN_PATCH)) return;
  await queuedArtifactActivities(settings).forgetTurnJournal();
}

/** Saves the ended dialogue's transcript (or its tail, when parts were written) and tags the outcome. */
async function saveEnded(
  ended: EndedDialogue,
  partition: TranscriptPartition,
  artifacts: ActivityProxy<ArtifactActivities>,
  view: RolloutView,
  storeAt: string,
  origin: { rolloutId: string; runName: string | null; step: number | null; startedAt: string },
): Promise<{ reward: number; turns: number; tokens: RolloutSummary['tokens']; artifact: string }> {
  const { outcome, emotion: finalEmotion } = ended;
  view.progress.outcome = outcome;
  view.enter('saving');
  const transcript = ended.transcript({ ...origin, finishedAt: new Date().toISOString() });
  const savedSummary = () => timeline.transcriptSummary(transcript.turns.length, outcome, finalEmotion);
  const saved = view.say(savedSummary);
  const artifact =
    partition.parts === 0
      ? await view.waitable(summarisedCall(artifacts.saveTranscript, saved), savedSummary, storeAt)(transcript)
      : await view.waitable(
          summarisedCall(artifacts.saveTranscriptFromParts, saved),
          savedSummary,
          storeAt,
        )(partition.tail(transcript));
  upsertSearchAttributes([
    { key: SEARCH_ATTRIBUTES.outcome, value: outcome },
    { key: SEARCH_ATTRIBUTES.finalEmotion, value: finalEmotion },
  ]);
  view.enter('done');
  return { reward: transcript.reward, turns: transcript.turns.length, tokens: transcript.tokens, artifact };
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
