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

  it('survives a SIGKILLed worker mid-rollout without repeating a finished LLM call', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 2 }) }, set: ['policy.timeoutMs=2000'] });
    const address = rig.env.address;
    const first = WorkerProcess.start(address, rig.configSet);
    workers.push(first);
    await first.ready();
    // The third policy call never gets an answer: the worker dies while it waits.
    rig.fake.inject('policy', 3, 'hold');
    const handle = await rig.startRollout(fixtureScenario('test-venting-negative-baker'), 21, { maxTurns: 4 });
    await rig.fake.waitForCall('policy', 3);
    await first.kill('SIGKILL');
    const answeredBeforeCrash = rig.fake.calls.filter((c) => c.status === 200).length;
    assert.equal(answeredBeforeCrash, 6, '2 policy + 2 analysis + 2 reply calls finished before the crash');

    const second = WorkerProcess.start(address, rig.configSet);
    workers.push(second);
    await second.ready();
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
});
