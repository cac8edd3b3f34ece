import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { findTemporalCli } from '../../src/temporal/cliBinary.js';
import { ACTIVITY_SUMMARIES_PATCH, LOCAL_ARTIFACT_ACTIVITIES_PATCH } from '../../src/workflows/rollout.js';
import { localActivityTypes, patchIds } from '../support/historyMarkers.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { WAIT_AT_OUTAGE_PATCH } from '../../src/workflows/outageWait.js';

const run = promisify(execFile);

interface ShownEvent {
  activityTaskScheduledEventAttributes?: { activityType?: { name?: string } };
  markerRecordedEventAttributes?: { markerName?: string };
  userMetadata?: { summary?: { data?: string } };
}

/** Each scheduled activity of a rollout with its summary, read as an operator would: `temporal workflow show --output json`. */
async function scheduledWithSummaries(workflowId: string): Promise<Array<[string, string | null]>> {
  const env = await sharedTestEnv();
  const address = env.connection.options.address;
  const { stdout } = await run(
    findTemporalCli(),
    ['workflow', 'show', '-w', workflowId, '--address', address, '--namespace', 'default', '--output', 'json'],
    { maxBuffer: 64 * 1024 * 1024 },
  );
  const events = (JSON.parse(stdout) as { events: ShownEvent[] }).events;
  return events
    .filter((e) => e.activityTaskScheduledEventAttributes)
    .map((e) => {
      const data = e.userMetadata?.summary?.data;
      return [
        e.activityTaskScheduledEventAttributes?.activityType?.name ?? '?',
        data ? (JSON.parse(Buffer.from(data, 'base64').toString('utf8')) as string) : null,
      ];
    });
}

interface WorkflowMetadata {
  currentDetails?: string;
}

describe('rollout timeline in the Temporal UI: activity summaries and current details (real dev server)', function () {
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('gives each scheduled activity a summary with its turn and the emotion, and details with the dialogue so far', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 3 }) },
      set: [...ROLLOUT_MODES.perCall],
    });
    await rig.startWorkers();
    const scenario = fixtureScenario('test-venting-negative-baker');
    const handle = await rig.startRollout(scenario, 7, { maxTurns: 3, initialEmotion: 40 });
    const summary = await handle.result();
    assert.deepEqual(summary.emotions, [40, 43, 46, 49]);
    assert.deepEqual(await scheduledWithSummaries(handle.workflowId), [
      ['generatePolicyTurn', 'turn 1 · policy reply'],
      ['analyzeAssistantReply', 'turn 1 · analysis of the reply (emotion 40)'],
      ['writeUserMessage', 'turn 1 · user reply (analysis: 40 → 43, +3)'],
      ['generatePolicyTurn', 'turn 2 · policy reply'],
      ['analyzeAssistantReply', 'turn 2 · analysis of the reply (emotion 43)'],
      ['writeUserMessage', 'turn 2 · user reply (analysis: 43 → 46, +3)'],
      ['generatePolicyTurn', 'turn 3 · policy reply'],
      ['analyzeAssistantReply', 'turn 3 · analysis of the reply (emotion 46)'],
      ['saveTranscript', 'transcript · 3 turns, turn-limit, final emotion 49'],
    ]);
    const events = (await handle.fetchHistory()).events ?? [];
    assert.deepEqual(patchIds(events), [ACTIVITY_SUMMARIES_PATCH, WAIT_AT_OUTAGE_PATCH]);
    const metadata = await handle.query<WorkflowMetadata>('__temporal_workflow_metadata');
    assert.match(metadata.currentDetails ?? '', /\*\*turn\*\* 3 of 3 · \*\*phase\*\* done/);
    assert.match(metadata.currentDetails ?? '', /\*\*emotion\*\* 49 \(40 → 43 → 46 → 49\)/);
    assert.match(metadata.currentDetails ?? '', /\*\*outcome\*\* turn-limit/);
  });

  it('rollout.activityPer=turn: one summary per turn activity, naming its turn and the emotion before it', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: -2 }) },
      set: [...ROLLOUT_MODES.turnActivity],
    });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 7, {
      maxTurns: 2,
      initialEmotion: 50,
    });
    await handle.result();
    assert.deepEqual(await scheduledWithSummaries(handle.workflowId), [
      ['playDialogueTurn', 'turn 1 · policy reply, analysis, user reply (emotion 50)'],
      ['playDialogueTurn', 'turn 2 · policy reply, analysis, user reply (emotion 48)'],
      ['saveTranscript', 'transcript · 2 turns, turn-limit, final emotion 46'],
    ]);
  });

  it('local turns: each turn marker carries its summary, as the UI shows it beside the marker', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: -2 }) },
      set: [...ROLLOUT_MODES.localTurn],
    });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 7, {
      maxTurns: 2,
      initialEmotion: 50,
    });
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    const shown = events.flatMap((e) => {
      const [type] = localActivityTypes([e]);
      if (!type) return [];
      const data = e.userMetadata?.summary?.data;
      return [[type, data ? (JSON.parse(Buffer.from(data).toString('utf8')) as string) : null]];
    });
    assert.deepEqual(shown, [
      ['playDialogueTurn', 'turn 1 · policy reply, analysis, user reply (emotion 50)'],
      ['playDialogueTurn', 'turn 2 · policy reply, analysis, user reply (emotion 48)'],
      ['saveTranscript', 'transcript · 2 turns, turn-limit, final emotion 46'],
    ]);
  });

  it('rollout.llmCalls=local: the patch is recorded before the local-artifacts one', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 1 }) },
      set: [...ROLLOUT_MODES.localPerCall],
    });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 3, { maxTurns: 1 });
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    assert.deepEqual(patchIds(events), [
      ACTIVITY_SUMMARIES_PATCH,
      WAIT_AT_OUTAGE_PATCH,
      LOCAL_ARTIFACT_ACTIVITIES_PATCH,
    ]);
  });
});
