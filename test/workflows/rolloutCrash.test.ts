import assert from 'node:assert/strict';
import { createRolloutRig, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { WorkerProcess } from '../support/workerProcess.js';

describe('rollout durability', function () {
  let rig: RolloutRig | undefined;
  let workers: WorkerProcess[] = [];
  afterEach(async () => {
    for (const w of workers) await w.kill();
    workers = [];
    await rig?.close();
    rig = undefined;
  });

  /** Starts a 4-turn rollout in a worker process and SIGKILLs it while the third policy call waits for its answer. */
  async function killDuringThirdPolicyCall(set: string[]) {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 2 }) }, set: ['policy.timeoutMs=2000', ...set] });
    const first = WorkerProcess.start(rig.env.address, rig.configSet);
    workers.push(first);
    await first.ready();
    rig.fake.inject('policy', 3, 'hold');
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 21, { maxTurns: 4 });
    await rig.fake.waitForCall('policy', 3);
    await first.kill('SIGKILL');
    return { rig, handle, restart: async () => {
      const second = WorkerProcess.start(rig!.env.address, rig!.configSet);
      workers.push(second);
      await second.ready();
    } };
  }

  it('survives a SIGKILLed worker mid-rollout without repeating a finished LLM call', async () => {
    const { rig, handle, restart } = await killDuringThirdPolicyCall([]);
    const answeredBeforeCrash = rig.fake.calls.filter((c) => c.status === 200).length;
    assert.equal(answeredBeforeCrash, 6, '2 policy + 2 analysis + 2 reply calls finished before the crash');

    await restart();
    const summary = await handle.result();

    assert.equal(summary.outcome, 'turn-limit');
    assert.equal(summary.turns, 4);
    assert.deepEqual(summary.emotions, [40, 42, 44, 46, 48]);
    // Every request that was answered was answered exactly once: no finished call was made again.
    for (const [key, count] of rig.fake.successCountsByKey()) assert.equal(count, 1, `request ${key} answered ${count} times`);
    // 4 policy turns plus the one lost with the worker.
    assert.equal(rig.fake.count('policy'), 5);
    assert.equal(rig.fake.count('analysis'), 4);
    assert.equal(rig.fake.count('reply'), 3);
  });

  it('rollout.llmCalls=local: after a SIGKILL, the calls since the last completed workflow task are made again, identically', async () => {
    const { rig, handle, restart } = await killDuringThirdPolicyCall(['rollout.llmCalls=local']);
    // Local activities are recorded when their workflow task completes, and this one was still open.
    assert.equal((await handle.fetchHistory()).events?.filter((e) => e.markerRecordedEventAttributes).length, 0);

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
    assert.equal((await handle.fetchHistory()).events?.filter((e) => e.markerRecordedEventAttributes).length, 4 + 4 + 3);
  });
});
