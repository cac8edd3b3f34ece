import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { DeterminismViolationError } from '@temporalio/workflow';
import { Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import { localActivityTypes, patchIds } from '../support/historyMarkers.js';
import { sharedWorkflowBundle } from '../support/temporalEnv.js';
import { ACTIVITY_SUMMARIES_PATCH } from '../../src/workflows/rollout.js';
import { TURN_JOURNAL_FORGOTTEN_PATCH, TURN_JOURNAL_SWEPT_PATCH } from '../../src/journal/journalPatches.js';
import { WAIT_AT_OUTAGE_ASKED_LATE_PATCH } from '../../src/workflows/outageWait.js';
import { WAITS_FORGOTTEN_AT_CANCEL_PATCH } from '../../src/workflows/dialogueWaits.js';

const HISTORIES = join(__dirname, '..', 'fixtures', 'histories');

function loadHistory(name: string): unknown {
  return JSON.parse(readFileSync(join(HISTORIES, name), 'utf8'));
}

describe('workflow replay (determinism guard)', () => {
  it('replays the recorded rollout history with the current workflow code', async () => {
    const history = historyFromJSON(loadHistory('rollout.json'));
    assert.ok((history.events ?? []).length > 20, 'the fixture holds a whole rollout');
    await Worker.runReplayHistory({ workflowBundle: await sharedWorkflowBundle() }, history, 'replay-fixture-rollout');
  });

  it('replays a recorded rollout with one activity per turn (rollout.activityPer: turn)', async () => {
    const history = historyFromJSON(loadHistory('rollout-per-turn.json'));
    const turns = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'playDialogueTurn',
    );
    assert.equal(turns.length, 3, 'the fixture holds a whole 3-turn rollout');
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-rollout-per-turn',
    );
  });

  it('replays a rollout with local turns, and one recorded before its artifact activities became local', async () => {
    const current = historyFromJSON(loadHistory('rollout-local-turn.json'));
    assert.deepEqual(localActivityTypes(current.events ?? []), [
      'writeUserMessage',
      'playDialogueTurn',
      'playDialogueTurn',
      'playDialogueTurn',
      'saveTranscript',
    ]);
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      current,
      'replay-fixture-rollout-local-turn',
    );
    // Recorded by the code before LOCAL_ARTIFACT_ACTIVITIES_PATCH: the transcript write is a regular
    // activity there, and the patch makes the current code take that path again on replay.
    const before = historyFromJSON(loadHistory('rollout-local-turn-before-local-artifacts.json'));
    assert.deepEqual(patchIds(before.events ?? []), []);
    assert.deepEqual(
      (before.events ?? [])
        .filter((e) => e.activityTaskScheduledEventAttributes)
        .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name),
      ['saveTranscript'],
    );
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      before,
      'replay-fixture-rollout-local-turn-before',
    );
  });

  /** A local-turn fixture's markers and queued activities, then its replay. */
  async function replayLocalTurns(file: string, patch: string, queued: string[]): Promise<void> {
    const history = historyFromJSON(loadHistory(file));
    const events = history.events ?? [];
    assert.ok(patchIds(events).includes(patch), `${file} holds ${patch}`);
    assert.deepEqual(localActivityTypes(events), [
      'writeUserMessage',
      'playDialogueTurn',
      'playDialogueTurn',
      'playDialogueTurn',
      'saveTranscript',
    ]);
    assert.deepEqual(
      events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
      queued,
    );
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      `replay-fixture-${file.replace(/\.json$/, '')}`,
    );
  }

  it('replays a rollout recorded when local turns removed their journal in a queued activity after the turns', async () => {
    await replayLocalTurns('rollout-local-turn-journal.json', TURN_JOURNAL_FORGOTTEN_PATCH, ['forgetTurnJournal']);
  });

  it('replays a rollout with local turns whose journal is left to the sweeper: no queued activity', async () => {
    await replayLocalTurns('rollout-local-turn-swept.json', TURN_JOURNAL_SWEPT_PATCH, []);
  });

  it('replays a rollout recorded before rollouts waited at an outage: it fails at the failed call, no wait', async () => {
    const history = historyFromJSON(loadHistory('rollout-failed-before-wait-at-outage.json'));
    const events = history.events ?? [];
    assert.deepEqual(patchIds(events), [ACTIVITY_SUMMARIES_PATCH], 'no wait-at-outage marker');
    assert.equal(events.filter((e) => e.timerStartedEventAttributes).length, 0, 'no wait');
    assert.ok(
      events.some((e) => e.activityTaskFailedEventAttributes),
      'an activity failed',
    );
    assert.ok(events.at(-1)?.workflowExecutionFailedEventAttributes, 'the rollout failed');
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-rollout-failed-before-wait-at-outage',
    );
  });

  it('replays a rollout that waited when the wait-at-outage patch was asked at the failed call', async () => {
    const history = historyFromJSON(loadHistory('rollout-waited-at-outage-asked-late.json'));
    const events = history.events ?? [];
    assert.deepEqual(patchIds(events), [ACTIVITY_SUMMARIES_PATCH, WAIT_AT_OUTAGE_ASKED_LATE_PATCH]);
    assert.ok(
      events.some((e) => e.timerStartedEventAttributes),
      'the rollout waited',
    );
    assert.ok(events.at(-1)?.workflowExecutionCompletedEventAttributes, 'and went on to the end');
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-rollout-waited-at-outage-asked-late',
    );
  });

  it('replays a recorded training step (rollout fan-out, optimizer, publishing, continue-as-new)', async () => {
    const history = historyFromJSON(loadHistory('training-step.json'));
    const types = new Set((history.events ?? []).map((e) => e.eventType));
    assert.ok((history.events ?? []).length > 30);
    assert.ok(
      types.has(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW),
      'the step ends by continuing as new',
    );
    await Worker.runReplayHistory({ workflowBundle: await sharedWorkflowBundle() }, history, 'replay-fixture-training');
  });

  it("replays a first-finished training step recorded before a step's publish ran beside the next optimizer step: it publishes in its own run, as recorded", async () => {
    // Full weights published to vLLM from the trainer's export (publishesWhileOptimizing holds for it):
    // a run of the workflow under way at an upgrade must not leave its step's publish to the next run.
    const history = historyFromJSON(loadHistory('training-first-finished-before-publish-overlap.json'));
    const scheduled = (history.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    assert.deepEqual(scheduled.slice(-3), ['applyOptimizerStep', 'publishPolicyVersion', 'recordStepMetrics']);
    assert.deepEqual(patchIds(history.events ?? []), []);
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-training-first-finished',
    );
  });

  it('replays a first-finished run recorded before a run forgot the wait of a dialogue it cancelled: its end cancels one still waiting, and its phase stays as recorded', async () => {
    // Recorded by the code before WAITS_FORGOTTEN_AT_CANCEL_PATCH: a 1-step run whose end cancels a
    // dialogue waiting at a failed analysis. Forgetting the wait there would upsert the phase anew.
    const history = historyFromJSON(loadHistory('training-first-finished-wait-at-end-before-forget.json'));
    const events = history.events ?? [];
    assert.equal(events.filter((e) => e.requestCancelExternalWorkflowExecutionInitiatedEventAttributes).length, 1);
    assert.deepEqual(patchIds(events), []);
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-training-first-finished-wait-at-end',
    );
  });

  it('replays a first-finished run recorded before a run forgot the wait of a dialogue its watchdog found closed: the phase stays as recorded', async () => {
    // Recorded by the code before WAITS_FORGOTTEN_AT_CLOSE_PATCH: the one dialogue in flight waits at a
    // failed analysis, is terminated by hand, and the watchdog counts it failed. Forgetting its wait
    // there would upsert the phase anew.
    const history = historyFromJSON(loadHistory('training-first-finished-terminated-while-waiting-before-forget.json'));
    const events = history.events ?? [];
    assert.equal(events.filter((e) => e.childWorkflowExecutionTerminatedEventAttributes).length, 1);
    assert.deepEqual(patchIds(events), [WAITS_FORGOTTEN_AT_CANCEL_PATCH]);
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle() },
      history,
      'replay-fixture-training-first-finished-terminated-while-waiting',
    );
  });

  it('fails when the code would schedule different activities than the history holds', async () => {
    // Rename the first policy activity in the recorded history: the same code must now be judged non-deterministic.
    const json = loadHistory('rollout.json') as {
      events: { activityTaskScheduledEventAttributes?: { activityType?: { name?: string } } }[];
    };
    const scheduled = json.events.find(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'generatePolicyTurn',
    );
    assert.ok(scheduled?.activityTaskScheduledEventAttributes?.activityType);
    scheduled.activityTaskScheduledEventAttributes.activityType.name = 'somethingElse';
    await assert.rejects(
      Worker.runReplayHistory(
        { workflowBundle: await sharedWorkflowBundle() },
        historyFromJSON(json),
        'replay-fixture-rollout-altered',
      ),
      (error: unknown) => error instanceof DeterminismViolationError,
    );
  });
});
