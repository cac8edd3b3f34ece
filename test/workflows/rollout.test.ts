import { isTurnRecordKey } from '../../src/journal/turnJournalKeys.js';
import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import type { Transcript } from '../../src/core/transcript.js';
import type { CallRole, Fault } from '../support/fakeOpenAI.js';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { localActivityTypes, patchIds } from '../support/historyMarkers.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { ACTIVITY_SUMMARIES_PATCH, LOCAL_ARTIFACT_ACTIVITIES_PATCH } from '../../src/workflows/rollout.js';
import { TURN_JOURNAL_SWEPT_PATCH } from '../../src/journal/journalPatches.js';
import { eventually } from '../support/eventually.js';
import { WAIT_AT_OUTAGE_PATCH } from '../../src/workflows/outageWait.js';

function failureMessage(error: unknown): string {
  assert.ok(error instanceof WorkflowFailedError, `expected WorkflowFailedError, got ${String(error)}`);
  // The workflow fails with the activity's failure as its cause.
  let cause: unknown = error.cause;
  const messages: string[] = [];
  while (cause instanceof Error) {
    messages.push(cause.message);
    cause = (cause as Error & { cause?: unknown }).cause;
  }
  return messages.join(' <- ');
}

describe('rollout workflow (real dev server, fake OpenAI server)', function () {
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('runs a full dialogue turn by turn and stores the transcript', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 3 }) } });
    await rig.startWorkers();
    const scenario = fixtureScenario('test-venting-negative-baker');
    const summary = await rig.runRollout(scenario, 7, { maxTurns: 4, initialEmotion: 40 });
    assert.equal(summary.outcome, 'turn-limit');
    assert.equal(summary.turns, 4);
    assert.deepEqual(summary.emotions, [40, 43, 46, 49, 52]);
    assert.equal(summary.finalEmotion, 52);
    assert.equal(summary.reward, 0.52);
    // 4 policy + 4 analysis + 3 replies (none after the last analysed turn); the opening is the scenario's.
    assert.equal(rig.fake.count('policy'), 4);
    assert.equal(rig.fake.count('analysis'), 4);
    assert.equal(rig.fake.count('reply'), 3);
    assert.equal(rig.fake.count('opening'), 0);
    const transcript = await rig.store.getJson<Transcript>(summary.artifact);
    assert.equal(transcript.turns.length, 4);
    assert.equal(transcript.turns[0]?.userMessage, scenario.firstMessage);
    assert.equal(transcript.turns[1]?.emotionBefore, 43);
    assert.equal(transcript.turns[1]?.userMessage, transcript.turns[0]?.userReply?.text);
    assert.ok(transcript.turns[3]?.analysis?.analysis.innerThoughts);
    assert.ok(summary.tokens.policyCompletion > 0 && summary.tokens.simulatorPrompt > 0);
    // The policy's prompt at turn 2 holds the whole visible dialogue so far.
    assert.deepEqual(
      transcript.turns[1]?.promptMessages.map((m) => m.role),
      ['system', 'user', 'assistant', 'user'],
    );
  });

  it('ends in success when emotion reaches 100', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 10 }) } });
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 1, { initialEmotion: 85 });
    assert.equal(summary.outcome, 'success');
    assert.deepEqual(summary.emotions, [85, 95, 100]);
    assert.equal(summary.reward, 1);
    assert.equal(rig.fake.count('reply'), 1);
  });

  it('ends in failure when emotion drops below 10, clamping changes to [-10, 10]', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: -25 }) } });
    await rig.startWorkers();
    // The fake sends -25 as JSON; the parser clamps it to -10.
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 1, {
      initialEmotion: 25,
      simulator: { ...rig.settings().simulator, structuredOutput: 'none' },
    });
    assert.equal(summary.outcome, 'failure');
    assert.deepEqual(summary.emotions, [25, 15, 5]);
    assert.equal(summary.reward, 0.05);
  });

  it('ends when the simulated user says goodbye', async () => {
    rig = await createRolloutRig({
      behaviour: {
        analysis: () => ({ emotionChange: 1 }),
        reply: (ctx) => (ctx.turn >= 2 ? 'ok. whatever. bye.' : 'not really, no'),
      },
    });
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 3);
    assert.equal(summary.outcome, 'goodbye');
    assert.equal(summary.turns, 2);
    assert.equal(summary.finalEmotion, 42);
  });

  it('lets the simulator write the opening when the scenario has none', async () => {
    rig = await createRolloutRig({ behaviour: { opening: () => "so. about next week's route..." } });
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-not-my-fault-avoidant-cyclist'), 5, { maxTurns: 1 });
    const transcript = await rig.store.getJson<Transcript>(summary.artifact);
    assert.equal(rig.fake.count('opening'), 1);
    assert.equal(transcript.opening.writtenBySimulator, true);
    assert.equal(transcript.turns[0]?.userMessage, "so. about next week's route...");
  });

  it('think mode: only the reply reaches the simulator and later turns', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 2 }) } });
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 9, {
      maxTurns: 3,
      think: true,
    });
    assert.equal(summary.outcome, 'turn-limit');
    const transcript = await rig.store.getJson<Transcript>(summary.artifact);
    for (const turn of transcript.turns) {
      assert.ok(turn.policy.thinking && turn.policy.thinking.length > 0);
      assert.ok(!turn.policy.reply.includes('<think>'));
      for (const message of turn.promptMessages.slice(1))
        assert.ok(!message.content.includes('<think>'), 'thinking leaked into a later prompt');
    }
    const simulatorPrompts = rig.fake.calls.filter((c) => c.role === 'analysis');
    assert.equal(simulatorPrompts.length, 3);
  });

  it('think mode: a malformed output ends the dialogue with reward 0', async () => {
    rig = await createRolloutRig({ behaviour: { policy: () => 'I just answer without thinking first.' } });
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 9, { think: true });
    assert.equal(summary.outcome, 'malformed');
    assert.equal(summary.reward, 0);
    assert.equal(rig.fake.count('analysis'), 0);
    const transcript = await rig.store.getJson<Transcript>(summary.artifact);
    assert.equal(transcript.turns[0]?.policy.malformed, true);
    assert.match(transcript.turns[0]?.policy.problem ?? '', /think/);
  });

  it('retries 429, 500 and timeouts, and accepts analyses that ignore response_format', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 4 }) },
      set: ['policy.timeoutMs=500'],
    });
    rig.fake.inject('policy', 1, '429');
    rig.fake.inject('policy', 2, '500');
    rig.fake.inject('policy', 4, 'timeout');
    rig.fake.inject('analysis', 1, 'labelled');
    rig.fake.inject('analysis', 2, 'plain-json');
    rig.fake.inject('reply', 1, '500');
    await rig.startWorkers();
    const summary = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 11, { maxTurns: 3 });
    assert.equal(summary.outcome, 'turn-limit');
    assert.deepEqual(summary.emotions, [40, 44, 48, 52]);
    // 3 successful policy calls + 2 failures before the first + 1 timeout.
    assert.equal(rig.fake.count('policy'), 6);
    assert.equal(rig.fake.count('reply'), 3);
  });

  it('a queued LLM call sends the server no heartbeat while it is shorter than its heartbeat interval', async () => {
    rig = await createRolloutRig({ set: [...ROLLOUT_MODES.perCall] });
    rig.fake.inject('policy', 2, 'hold');
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 13, { maxTurns: 2 });
    await rig.fake.waitForCall('policy', 2);
    // An absence has no event to wait for: watch the pending call for 2 s, far longer than a heartbeat
    // sent at the call's start takes to reach the server, and far shorter than the heartbeat interval.
    const watchUntil = Date.now() + 2000;
    for (;;) {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      assert.equal(pending.length, 1);
      assert.equal(pending[0]!.activityType?.name, 'generatePolicyTurn');
      assert.equal(pending[0]!.lastHeartbeatTime ?? null, null, 'the held policy call heartbeated');
      if (Date.now() >= watchUntil) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    rig.fake.release();
    assert.equal((await handle.result()).turns, 2);
  });

  function dialogueOf(transcript: Transcript) {
    return transcript.turns.map((t) => [
      t.promptMessages,
      t.policy.reply,
      t.analysis?.analysis,
      t.emotionAfter,
      t.userReply?.text,
    ]);
  }

  /**
   * Runs a 3-turn dialogue with one activity per call, then again with `set` and the injected
   * `faults`; both must give the same summary and the same dialogue. Returns the second run.
   */
  async function sameDialogueAsPerCall(set: string[], faults: Array<[CallRole, number, Fault]>) {
    const behaviour = { analysis: () => ({ emotionChange: 3 }) };
    const scenario = fixtureScenario('test-venting-negative-baker');
    rig = await createRolloutRig({ behaviour, set: [...ROLLOUT_MODES.perCall] });
    await rig.startWorkers();
    const reference = await rig.runRollout(scenario, 7, { maxTurns: 3 });
    const referenceDialogue = dialogueOf(await rig.store.getJson<Transcript>(reference.artifact));
    await rig.close();

    rig = await createRolloutRig({ behaviour, set });
    for (const [role, nth, fault] of faults) rig.fake.inject(role, nth, fault);
    await rig.startWorkers();
    const handle = await rig.startRollout(scenario, 7, { maxTurns: 3 });
    const summary = await handle.result();
    assert.deepEqual({ ...summary, rolloutId: '', artifact: null }, { ...reference, rolloutId: '', artifact: null });
    // The same prompts and answers as with one activity per call.
    assert.deepEqual(dialogueOf(await rig.store.getJson<Transcript>(summary.artifact)), referenceDialogue);
    return { rig, handle };
  }

  it('rollout.llmCalls=local: the same dialogue and retries, with each LLM call a local-activity marker', async () => {
    const { rig, handle } = await sameDialogueAsPerCall(
      [...ROLLOUT_MODES.localPerCall, 'policy.maxConcurrency=1'],
      [
        ['policy', 2, '500'],
        ['reply', 1, '429'],
      ],
    );
    assert.equal(rig.settings().llmCalls, 'local');
    // 3 policy calls + the 500; 2 replies + the 429.
    assert.equal(rig.fake.count('policy'), 4);
    assert.equal(rig.fake.count('reply'), 3);
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name);
    const local = localActivityTypes(events);
    assert.equal(local.filter((t) => t !== 'saveTranscript').length, 3 + 3 + 2, 'one marker per finished LLM call');
    assert.equal(local[local.length - 1], 'saveTranscript', 'the transcript write is local too');
    assert.deepEqual(scheduled, [], 'no regular activity: no task goes through the server');
    assert.deepEqual(patchIds(events), [
      ACTIVITY_SUMMARIES_PATCH,
      WAIT_AT_OUTAGE_PATCH,
      LOCAL_ARTIFACT_ACTIVITIES_PATCH,
    ]);
  });

  it('rollout.activityPer=turn: one activity per turn, the same dialogue, and a failed call resumes after the finished ones', async () => {
    const { rig, handle } = await sameDialogueAsPerCall(
      [...ROLLOUT_MODES.turnActivity, 'policy.maxConcurrency=1', 'simulator.maxConcurrency=1'],
      [
        ['reply', 1, '500'],
        ['analysis', 2, '429'],
      ],
    );
    assert.equal(rig.settings().activityPer, 'turn');
    // The retried turns did not repeat their finished calls (the heartbeat carried them over).
    assert.equal(rig.fake.count('policy'), 3);
    assert.equal(rig.fake.count('analysis'), 3 + 1);
    assert.equal(rig.fake.count('reply'), 2 + 1);
    for (const [key, count] of rig.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
    const events = (await handle.fetchHistory()).events ?? [];
    const scheduled = events
      .filter((e) => e.activityTaskScheduledEventAttributes)
      .map((e) => e.activityTaskScheduledEventAttributes);
    assert.deepEqual(
      scheduled.map((a) => a?.activityType?.name),
      ['playDialogueTurn', 'playDialogueTurn', 'playDialogueTurn', 'saveTranscript'],
    );
    assert.equal(scheduled[0]?.taskQueue?.name, rig.settings().turnsTaskQueue);
    const attempts = events
      .filter((e) => e.activityTaskStartedEventAttributes)
      .map((e) => e.activityTaskStartedEventAttributes?.attempt);
    assert.deepEqual(attempts, [2, 2, 1, 1], 'turns 1 and 2 each needed a second attempt');
  });

  it('rollout.activityPer=turn with local activities: one marker per turn; a failed call plays its turn again without the calls its journal holds', async () => {
    const { rig, handle } = await sameDialogueAsPerCall([...ROLLOUT_MODES.localTurn], [['reply', 1, '500']]);
    // Turn 1 ran twice: its second attempt read its policy reply and analysis from the turn journal.
    assert.equal(rig.fake.count('policy'), 3);
    assert.equal(rig.fake.count('analysis'), 3);
    assert.equal(rig.fake.count('reply'), 2 + 1);
    for (const [key, count] of rig.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
    const events = (await handle.fetchHistory()).events ?? [];
    assert.deepEqual(
      localActivityTypes(events),
      ['playDialogueTurn', 'playDialogueTurn', 'playDialogueTurn', 'saveTranscript'],
      'one marker per turn, then the transcript write',
    );
    // No activity on a queue: the journal is left to the worker's sweeper, which removes it once the
    // server says the run is closed (test/journal/turnJournalSweeper.test.ts: never before).
    assert.ok(patchIds(events).includes(TURN_JOURNAL_SWEPT_PATCH));
    assert.deepEqual(
      events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
      [],
    );
    await eventually('the journal removed after the rollout closed', async () =>
      (await rig.store.list('journals/')).filter(isTurnRecordKey).length === 0 ? true : undefined,
    );
  });

  it('local turns journal a rollout whose workflow id no artifact key may hold (a schedule firing time: colons)', async () => {
    const local = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 3 }) },
      set: [...ROLLOUT_MODES.localTurn],
    });
    rig = local;
    await local.startWorkers();
    // What a scheduled evaluation's dialogues are called: the schedule suffixes its firing time.
    const workflowId = `nightly-2026-11-27T02:00:00Z-eval--test-venting-negative-baker-${Date.now()}`;
    const handle = await local.startRollout(
      fixtureScenario('test-venting-negative-baker'),
      7,
      { maxTurns: 2 },
      workflowId,
    );
    assert.equal((await handle.result()).turns, 2);
    await eventually('the journal removed after the rollout closed', async () =>
      (await local.store.list('journals/')).filter(isTurnRecordKey).length === 0 ? true : undefined,
    );
  });

  it('asks again after an unparseable analysis, then fails quoting the reply', async () => {
    rig = await createRolloutRig({ set: ['simulator.parseRetries=2'] });
    rig.fake.inject('analysis', 1, 'malformed');
    await rig.startWorkers();
    const ok = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 2, { maxTurns: 1 });
    assert.equal(ok.outcome, 'turn-limit');
    const transcript = await rig.store.getJson<Transcript>(ok.artifact);
    assert.equal(transcript.turns[0]?.analysis?.attempts, 2);

    for (const nth of [3, 4, 5]) rig.fake.inject('analysis', nth, 'malformed');
    const error = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 3, { maxTurns: 1 }).then(
      () => null,
      (e: unknown) => e,
    );
    const message = failureMessage(error);
    assert.match(message, /no parseable analysis after 3 attempts \(emotionChange: missing/);
    assert.match(message, /Sorry, I cannot do that\. \{not json/);
    assert.equal(rig.fake.count('analysis'), 5, 'an unparseable reply must not be retried without bound');
  });

  it('fails fast with a clear message on a rejected request (401)', async () => {
    rig = await createRolloutRig();
    rig.fake.inject('policy', 1, '401');
    await rig.startWorkers();
    const error = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 2).then(
      () => null,
      (e: unknown) => e,
    );
    const message = failureMessage(error);
    assert.match(
      message,
      /policy endpoint http:\/\/127\.0\.0\.1:\d+\/v1 \(model "fake-policy"\): HTTP 401 \(check POLICY_API_KEY\)/,
    );
    assert.equal(rig.fake.count('policy'), 1, 'a 401 is not retried');
  });

  it('names the endpoint when it is unreachable', async () => {
    rig = await createRolloutRig({
      // Without waiting for an operator (rollout.maxWaitMinutes=0), the dialogue fails once the retries run out.
      set: ['simulator.baseURL=http://127.0.0.1:9/v1', 'simulator.retry.maximumAttempts=2', 'rollout.maxWaitMinutes=0'],
    });
    await rig.startWorkers();
    const error = await rig.runRollout(fixtureScenario('test-venting-negative-baker'), 2).then(
      () => null,
      (e: unknown) => e,
    );
    assert.match(
      failureMessage(error),
      /simulator endpoint http:\/\/127\.0\.0\.1:9\/v1 \(model "fake-simulator"\): unreachable/,
    );
  });
});
