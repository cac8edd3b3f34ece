import { isTurnRecordKey } from '../../src/journal/turnJournalKeys.js';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { STOP_AFTER_CHECK_ENV } from '../../src/http/beforeRequest.js';
import assert from 'node:assert/strict';
import type { WorkflowHandle } from '@temporalio/client';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { WorkerProcess } from '../support/workerProcess.js';
import { localActivityTypes } from '../support/historyMarkers.js';
import { storedPayloadValue } from '../support/temporalEnv.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { eventually } from '../support/eventually.js';
import type { Transcript } from '../../src/core/transcript.js';

describe('rollout durability', function () {
  let rig: RolloutRig | undefined;
  let workers: WorkerProcess[] = [];
  afterEach(async () => {
    for (const w of workers) await w.kill();
    workers = [];
    await rig?.close();
    rig = undefined;
  });

  /**
   * Starts a 4-turn rollout in a worker process and SIGKILLs it while the third `role` call waits
   * for its answer (once `beforeKill` returns).
   */
  async function killDuringThird(
    role: 'policy' | 'reply',
    set: string[],
    beforeKill: (handle: WorkflowHandle) => Promise<void> = async () => {},
  ) {
    const endpoint = role === 'policy' ? 'policy' : 'simulator';
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 2 }) },
      set: [`${endpoint}.timeoutMs=2000`, ...set],
    });
    const first = WorkerProcess.start(rig.env.address, rig.configSet);
    workers.push(first);
    await first.ready();
    rig.fake.inject(role, 3, 'hold');
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 21, { maxTurns: 4 });
    await rig.fake.waitForCall(role, 3);
    await beforeKill(handle);
    await first.kill('SIGKILL');
    return {
      rig,
      handle,
      restart: async () => {
        const second = WorkerProcess.start(rig!.env.address, rig!.configSet);
        workers.push(second);
        await second.ready();
      },
    };
  }

  it('survives a SIGKILLed worker mid-rollout without repeating a finished LLM call', async () => {
    const { rig, handle, restart } = await killDuringThird('policy', [...ROLLOUT_MODES.perCall]);
    const answeredBeforeCrash = rig.fake.calls.filter((c) => c.status === 200).length;
    assert.equal(answeredBeforeCrash, 6, '2 policy + 2 analysis + 2 reply calls finished before the crash');

    await restart();
    const summary = await handle.result();

    assert.equal(summary.outcome, 'turn-limit');
    assert.equal(summary.turns, 4);
    assert.deepEqual(summary.emotions, [40, 42, 44, 46, 48]);
    // Every request that was answered was answered exactly once: no finished call was made again.
    for (const [key, count] of rig.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
    // 4 policy turns plus the one lost with the worker.
    assert.equal(rig.fake.count('policy'), 5);
    assert.equal(rig.fake.count('analysis'), 4);
    assert.equal(rig.fake.count('reply'), 3);
  });

  it('rollout.llmCalls=local: after a SIGKILL, the calls since the last completed workflow task are made again, identically', async () => {
    const { rig, handle, restart } = await killDuringThird('policy', [...ROLLOUT_MODES.localPerCall]);
    // Local activities are recorded when their workflow task completes, and this one was still open.
    assert.deepEqual(localActivityTypes((await handle.fetchHistory()).events ?? []), []);

    await restart();
    const summary = await handle.result();

    // The same dialogue as without the crash (the durability test above).
    assert.equal(summary.outcome, 'turn-limit');
    assert.deepEqual(summary.emotions, [40, 42, 44, 46, 48]);
    // The first two turns ran again with byte-identical requests (same prompts and seeds).
    const repeated = [...rig.fake.successCountsByKey()].filter(([, n]) => n > 1);
    assert.equal(repeated.length, 6, 'turns 1-2: policy, analysis and reply, each answered twice');
    for (const [key, count] of repeated) assert.equal(count, 2, `request ${key} answered ${count} times`);
    assert.equal(rig.fake.count('policy'), 4 + 1 + 2);
    assert.equal(rig.fake.count('analysis'), 4 + 2);
    assert.equal(rig.fake.count('reply'), 3 + 2);
    // Once recorded, each call is a marker in the history.
    assert.equal(
      localActivityTypes((await handle.fetchHistory()).events ?? []).filter((t) => t !== 'saveTranscript').length,
      4 + 4 + 3,
    );
  });

  /**
   * After a kill during turn 3's reply: the same dialogue as the per-call durability test above, no
   * answered request answered twice, and only the reply lost with the worker made again.
   */
  function assertTurnResumed(ran: RolloutRig, summary: { outcome: string; emotions: number[] }): void {
    assert.equal(summary.outcome, 'turn-limit');
    assert.deepEqual(summary.emotions, [40, 42, 44, 46, 48]);
    for (const [key, count] of ran.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
    assert.equal(ran.fake.count('policy'), 4);
    assert.equal(ran.fake.count('analysis'), 4);
    // 3 answered replies plus the one lost with the worker.
    assert.equal(ran.fake.count('reply'), 3 + 1);
  }

  /** The heartbeat details of the workflow's pending turn activity, as the server holds them. */
  async function heartbeatOfPendingTurn(handle: WorkflowHandle): Promise<Record<string, unknown> | null> {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    const payload = pending[0]?.heartbeatDetails?.payloads?.[0];
    return payload?.data ? storedPayloadValue<Record<string, unknown>>(payload) : null;
  }

  /** Waits until turn 3's heartbeat carrying its policy reply and analysis has reached the server. */
  async function untilTurnHeartbeatHolds(pending: WorkflowHandle): Promise<void> {
    const deadline = Date.now() + 30_000;
    for (;;) {
      const details = await heartbeatOfPendingTurn(pending);
      if (details?.policy && details.analysis) return;
      if (Date.now() > deadline)
        throw new Error(`turn 3's heartbeat never carried its analysis: ${JSON.stringify(details)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  it('rollout.activityPer=turn: after a SIGKILL mid-turn, the turn resumes after the calls its heartbeat recorded', async () => {
    // Turn 3's policy and analysis are done; wait until its heartbeat carrying both reaches the server.
    // The held reply must still be open when the worker dies. With the 2 s HTTP timeout of the other
    // tests it raced the heartbeat carrying the analysis (throttled by up to 2 s as well): under load
    // the reply timed out, was made again and the turn finished on the first worker.
    const { rig, handle, restart } = await killDuringThird(
      'reply',
      [...ROLLOUT_MODES.turnActivity, 'simulator.timeoutMs=15000'],
      untilTurnHeartbeatHolds,
    );
    await restart();
    const summary = await handle.result();

    assertTurnResumed(rig, summary);
    const turnsScheduled = (await handle.fetchHistory()).events?.filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'playDialogueTurn',
    ).length;
    assert.equal(turnsScheduled, 4);
  });

  it('rollout.activityPer=turn as local activities: after a SIGKILL mid-turn, no call the turn journal holds is made again', async () => {
    // A local turn cannot heartbeat, and its result reaches the history only when its workflow task
    // completes: the journal in the artifact store is what the next worker reads. Turn 3's policy and
    // analysis are done and journaled; its reply is held open when the worker dies.
    const untilJournalHolds = async (pending: WorkflowHandle) => {
      const { runId } = await pending.describe();
      const key = `journals/${pending.workflowId}/${runId}/turn-3.json`;
      const deadline = Date.now() + 30_000;
      for (;;) {
        const text = await rig!.store.getText(key);
        // A record names its input and attempt; the finished calls are under `finished`.
        const journal = text === null ? null : (JSON.parse(text) as { finished?: Record<string, unknown> });
        if (journal?.finished?.policy && journal.finished.analysis) return;
        if (Date.now() > deadline) throw new Error(`turn 3's journal never held its analysis: ${text}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    };
    const {
      rig: ran,
      handle,
      restart,
    } = await killDuringThird('reply', [...ROLLOUT_MODES.localTurn, 'simulator.timeoutMs=15000'], untilJournalHolds);
    await restart();
    const summary = await handle.result();

    assertTurnResumed(ran, summary);
    await eventually('the finished dialogue left no journal', async () =>
      (await ran.store.list('journals/')).filter(isTurnRecordKey).length === 0 ? true : undefined,
    );
  });

  it("local turns (the default): after a SIGKILL in turn 1, the transcript's turn 1 answered the opening it records, and no finished call was made twice", async () => {
    // A simulator that samples its opening (a different one each call) and a policy that echoes the
    // message it answers, so a reply kept for another opening shows in the transcript.
    rig = await createRolloutRig({
      behaviour: {
        analysis: () => ({ emotionChange: 2 }),
        opening: (ctx) => `Hey. Can we talk? (opening ${ctx.nth})`,
        policy: (ctx) => `You said: ${ctx.last}`,
      },
      set: [...ROLLOUT_MODES.localTurn, 'simulator.timeoutMs=15000'],
    });
    const first = WorkerProcess.start(rig.env.address, rig.configSet);
    workers.push(first);
    await first.ready();
    rig.fake.inject('analysis', 1, 'hold');
    const { firstMessage: _, ...scenario } = fixtureScenario('test-venting-negative-baker');
    const handle = await rig.startRollout(scenario, 23, { maxTurns: 2 });
    // Turn 1's policy reply is made (and journalled: its write comes before the analysis call).
    await rig.fake.waitForCall('analysis', 1);
    // The opening has not reached the history: the first workflow task is still open.
    assert.deepEqual(localActivityTypes((await handle.fetchHistory()).events ?? []), []);
    await first.kill('SIGKILL');
    const second = WorkerProcess.start(rig.env.address, rig.configSet);
    workers.push(second);
    await second.ready();
    const summary = await handle.result();

    const transcript = await rig.store.getJson<Transcript>(summary.artifact);
    assert.equal(transcript.opening.writtenBySimulator, true);
    assert.equal(transcript.turns[0]?.userMessage, transcript.opening.text);
    assert.equal(transcript.turns[0]?.policy.reply, `You said: ${transcript.opening.text}`);
    assert.equal(rig.fake.count('opening'), 1, 'the opening was written once, and reused by the second worker');
    assert.equal(rig.fake.count('policy'), 2, 'one policy call a turn');
    // 2 analyses plus the one lost with the worker; the dialogue ends at its turn limit after turn 2's.
    assert.equal(rig.fake.count('analysis'), 2 + 1);
    for (const [key, count] of rig.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
  });

  it('local turns: a worker stopped between its fence check and its request, woken after another took the dialogue over, sends nothing', async () => {
    // A 3 s workflow-task timeout: the check's lease is 300 ms. The takeover comes once the frozen
    // worker's long polls on its sticky queue expire (about a minute).
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 2 }) },
      // The call's own 2 min timeout outlasts the stop: on waking, its request would still go.
      set: [...ROLLOUT_MODES.localTurn, 'rollout.workflowTaskTimeoutMs=3000', 'policy.timeoutMs=120000'],
    });
    const dir = mkdtempSync(join(tmpdir(), 'attune-stop-after-check-'));
    try {
      const armed = join(dir, 'armed');
      writeFileSync(armed, '');
      const zombie = WorkerProcess.start(rig.env.address, rig.configSet, ['worker'], { [STOP_AFTER_CHECK_ENV]: armed });
      workers.push(zombie);
      await zombie.ready();
      const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 29, { maxTurns: 2 });
      // Turn 1's policy call, checked and about to leave when the worker froze.
      await eventually('the worker to stop itself after its first check', async () => {
        if (existsSync(armed)) return undefined;
        const state = readFileSync(`/proc/${zombie.pid}/stat`, 'utf8').split(') ')[1]?.[0];
        return state === 'T' || undefined;
      });
      assert.equal(rig.fake.count('policy'), 0, 'nothing sent before the stop');
      const taker = WorkerProcess.start(rig.env.address, rig.configSet);
      workers.push(taker);
      await taker.ready();
      await rig.fake.waitForCall('policy', 1);
      zombie.signal('SIGCONT');
      await zombie.waitForLog(/TurnAttemptSuperseded|this attempt stops/);
      const summary = await handle.result();
      assert.deepEqual(summary.emotions, [40, 42, 44]);
      assert.equal(rig.fake.count('policy'), 2, 'one policy call a turn: the woken worker sent none');
      for (const [key, count] of rig.fake.successCountsByKey())
        assert.equal(count, 1, `request ${key} answered ${count} times`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  /** Seconds from a new worker being ready to the dead worker's call arriving again at the endpoint. */
  async function takeoverSeconds(
    role: 'policy' | 'reply',
    set: string[],
    beforeKill?: (handle: WorkflowHandle) => Promise<void>,
  ): Promise<number> {
    const { rig, handle, restart } = await killDuringThird(role, set, beforeKill);
    await restart();
    const ready = performance.timeOrigin + performance.now();
    await rig.fake.waitForCall(role, 4);
    const retriedAtMs = rig.fake.arrivedAtMs(role, 4)!;
    const summary = await handle.result();
    assert.deepEqual(summary.emotions, [40, 42, 44, 46, 48]);
    for (const [key, count] of rig.fake.successCountsByKey())
      assert.equal(count, 1, `request ${key} answered ${count} times`);
    return (retriedAtMs - ready) / 1000;
  }

  // With the endpoint's default two-minute HTTP timeout, a call of a dead worker used to wait for its
  // whole start-to-close timeout (about 151 s); its heartbeat timeout now hands it over.
  it("a dead worker's queued LLM call is taken over within 30 s of a live worker, not after its HTTP timeout", async () => {
    const seconds = await takeoverSeconds('policy', [...ROLLOUT_MODES.perCall, 'policy.timeoutMs=120000']);
    assert.ok(seconds < 30, `taken over ${seconds.toFixed(1)} s after the new worker was ready`);
  });

  it("rollout.activityPer=turn: a dead worker's turn is taken over within 30 s of a live worker", async () => {
    const seconds = await takeoverSeconds(
      'reply',
      [...ROLLOUT_MODES.turnActivity, 'simulator.timeoutMs=120000', 'policy.timeoutMs=120000'],
      untilTurnHeartbeatHolds,
    );
    assert.ok(seconds < 30, `taken over ${seconds.toFixed(1)} s after the new worker was ready`);
  });
});
