import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevServer } from '../../src/temporal/devServer.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS, testConfigSet } from '../support/rolloutRig.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { WorkerProcess } from '../support/workerProcess.js';
import { startAttune, type AttuneResult } from './attuneProcess.js';

/**
 * How long one call of @temporalio/client outlives a frontend that went away, with the default gRPC
 * retry every Connection gets (10 attempts, 100 ms x 1.7 per attempt, at most 5 s apart, +-20 % jitter):
 * the longest the follower of old waited before "Failed to get Workflow execution history" ended the command.
 */
const OLD_GIVE_UP_MS = Array.from({ length: 9 }, (_, i) => Math.min(5000, 100 * 1.7 ** (i + 1)) * 1.2).reduce(
  (a, b) => a + b,
);
/**
 * How long the frontend stays away: the minute the issue names, past the old give-up (above) and past the
 * workers' own grace for failing task polls (60 s in the SDK core), so each follower and worker lives through it.
 */
const OUTAGE_MS = 65_000;

const LOST_LINE = (address: string) =>
  new RegExp(`lost the Temporal frontend at ${address.replace(/\./g, '\\.')}, following again in \\d+ s`);

/**
 * The frontend (the whole dev server) is away for OUTAGE_MS, then back on the same port and database. The
 * fault's length is the point of the test (no synchronisation waits on it); a command that ends meanwhile
 * fails the test at once.
 */
async function outage(server: DevServer, command: Promise<AttuneResult>): Promise<void> {
  // SIGKILL: no goodbye to its clients, as when its host dies.
  await server.stop('SIGKILL');
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      new Promise<void>((resolve) => {
        timer = setTimeout(resolve, OUTAGE_MS);
      }),
      command.then((ended) =>
        assert.fail(`the command ended (${ended.code}) while the frontend was away:\n${ended.stderr.slice(-3000)}`),
      ),
    ]);
  } finally {
    clearTimeout(timer);
  }
  await server.start();
}

describe('train and eval keep following their workflow through a Temporal frontend outage', function () {
  this.timeout(600_000);
  let server: DevServer;
  let rig: TrainingRig | undefined;
  let evalFake: FakeOpenAIServer | undefined;
  let worker: WorkerProcess | undefined;

  before(async () => {
    assert.ok(
      OUTAGE_MS > OLD_GIVE_UP_MS * 2,
      `the outage (${OUTAGE_MS} ms) outlasts the old give-up (${OLD_GIVE_UP_MS} ms)`,
    );
    server = await DevServer.create({ home: mkdtempSync(join(tmpdir(), 'attune-outage-')), headless: true });
    await server.start();
  });

  after(async () => {
    await worker?.kill();
    await rig?.close();
    await evalFake?.close();
    await server?.stop();
  });

  it('attune train (its own workers) and attune eval (an attune worker process serving it) end 0 with their results after the frontend was SIGKILLed mid-run and away for a minute', async () => {
    const env = { TEMPORAL_ADDRESS: server.address };
    // The evaluation, on its own queues: an `attune worker` process serves it; its first policy call is
    // held, so it is under way, and stays so, through the outage.
    evalFake = await FakeOpenAIServer.start({
      fault: (ctx) => (ctx.role === 'policy' && ctx.nth === 1 ? 'hold' : undefined),
    });
    const evalSet = testConfigSet(evalFake.url, ['policy.timeoutMs=300000']);
    worker = WorkerProcess.start(server.address, evalSet, ['worker', '--role', 'llm']);
    await worker.ready();
    const evaluation = startAttune(
      [
        'eval',
        '--name',
        'outage-eval',
        '--scenarios',
        FIXTURE_SCENARIOS,
        '--json',
        '--set',
        'evaluation.dialogue.maxTurns=2',
      ].concat(evalSet.flatMap((s) => ['--set', s])),
      env,
    );
    await evalFake.waitForCall('policy', 1);

    // The training run: no worker polls its queues, so the command starts its own, in its process.
    rig = await createTrainingRig({ server, set: TINY_TRAINING('grpo', 2) });
    const train = startAttune(['train', '--name', 'outage-train', ...rig.configSet.flatMap((s) => ['--set', s])], env);
    await train.stderrMatches(/no workers polling: starting them in this process/);
    // Step 1 makes 8 analysis calls: the second is early in it.
    await rig.fake.waitForCall('analysis', 2);

    await outage(server, Promise.race([train.done, evaluation.done]));
    evalFake.release();

    const trained = await train.done;
    assert.equal(trained.code, 0, trained.stderr);
    assert.match(trained.stderr, LOST_LINE(server.address));
    assert.match(trained.stdout, /^Run outage-train: 2 step\(s\) applied; final version outage-train@2\n/);
    assert.equal((await rig.trainer.runState('outage-train')).step, 2, 'the trainer applied each step once');

    const evaluated = await evaluation.done;
    assert.equal(evaluated.code, 0, evaluated.stderr);
    assert.match(evaluated.stderr, LOST_LINE(server.address));
    const report = JSON.parse(evaluated.stdout) as { count: number; evalId: string };
    assert.equal(report.evalId, 'outage-eval');
    assert.equal(report.count, 2);
    assert.equal(worker.running, true, 'the worker process lived through the outage');
  });
});
