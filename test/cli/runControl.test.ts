import assert from 'node:assert/strict';
import { pauseUpdate, type TrainingStatus } from '../../src/workflows/training.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { attune, startAttune } from './attuneProcess.js';

describe('operating a training run from the command line', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  after(async () => {
    await rig?.close();
  });

  it('status, pause, set, resume, stop, train attaches to the run and follows it to its end', async () => {
    rig = await createTrainingRig({ set: [...TINY_TRAINING('grpo', 3), 'training.maxInFlight=1'] });
    await rig.startWorkers();
    const { handle } = await rig.start('cli-ops');
    await rig.fake.waitForCall('analysis', 1);
    // Paused at once, so step 1 cannot end while the commands below start up; `attune pause` then finds it paused.
    await handle.executeUpdate(pauseUpdate);
    const set = rig.configSet.flatMap((s) => ['--set', s]);
    const env = { TEMPORAL_ADDRESS: rig.address };
    const run = (...args: string[]) => attune([...args, ...set], env);

    const paused = await run('pause', 'cli-ops');
    assert.equal(paused.code, 0, paused.stderr);
    assert.match(paused.stdout, /^cli-ops: paused \(step 1, [a-z-]+\)\n$/);

    const json = await run('status', 'cli-ops', '--json');
    assert.equal(json.code, 0, json.stderr);
    const status = JSON.parse(json.stdout) as TrainingStatus;
    assert.equal(status.runName, 'cli-ops');
    assert.equal(status.paused, true);
    const table = await run('status', 'cli-ops');
    assert.match(table.stdout, /^run +cli-ops \(grpo\)$/m);
    assert.match(table.stdout, /^phase +\S+ \(paused: in-flight rollouts finish, no new ones start\)$/m);

    const rejected = await run('set', 'cli-ops', 'learning_rate=-1');
    assert.equal(rejected.code, 1);
    assert.match(rejected.stderr, /^attune set: rejected: .*learning_rate: /m);
    const noPairs = await run('set', 'cli-ops');
    assert.equal(noPairs.code, 2);
    assert.match(noPairs.stderr, /attune set: set needs key=value pairs/);
    const changed = await run('set', 'cli-ops', 'learning_rate=0.002');
    assert.equal(changed.code, 0, changed.stderr);
    assert.equal(changed.stdout, 'cli-ops: {"learning_rate":0.002} from the next step\n');

    const resumed = await run('resume', 'cli-ops');
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.match(resumed.stdout, /^cli-ops: resumed \(step 1, [a-z-]+\)\n$/);
    // Paused again at once: step 1 stays open until `attune stop` below releases it.
    await handle.executeUpdate(pauseUpdate);

    const detached = await run('train', '--name', 'cli-ops', '--detach');
    assert.equal(detached.code, 0, detached.stderr);
    assert.equal(detached.stdout, 'cli-ops\n');
    assert.match(detached.stderr, /"workflowId":"train-cli-ops"/);
    const follow = startAttune(['train', '--name', 'cli-ops', ...set], env);
    // Its start (or attach) is logged before it follows the run.
    await follow.stderrMatches(/"workflowId":"train-cli-ops"/);
    // A stop releases a pause: the current step finishes, then the run ends.
    const stopping = await run('stop', 'cli-ops');
    assert.equal(stopping.code, 0, stopping.stderr);
    assert.match(stopping.stdout, /^cli-ops: will stop after the current step \(step 1, [a-z-]+\)\n$/);
    const followed = await follow.done;
    assert.equal(followed.code, 0, followed.stderr);
    assert.match(
      followed.stdout,
      /^Run cli-ops: 1 step\(s\) applied \(stopped by operator\); final version cli-ops@1\nMetrics: .*runs\/cli-ops\/metrics\.jsonl\n$/,
    );
  });
});
