import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { REPO_ROOT } from '../../src/paths.js';
import { freePort } from '../../src/temporal/devServer.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { TINY_TRAINING } from '../support/trainingRig.js';
import { attune } from './attuneProcess.js';

function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

describe('attune dev', function () {
  this.timeout(180_000);

  it('starts the dev server with its UI, the trainer and every worker role; other commands use them; Ctrl-C stops everything', async () => {
    const fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 1 }) });
    const [port, uiPort, trainerPort] = [await freePort(), await freePort(), await freePort()];
    const home = mkdtempSync(join(tmpdir(), 'attune-dev-test-'));
    const set = [
      '--set',
      `temporal.devServer.port=${port}`,
      '--set',
      `temporal.devServer.uiPort=${uiPort}`,
      '--set',
      `policy.baseURL=${fake.url}`,
      '--set',
      `simulator.baseURL=${fake.url}`,
      '--set',
      `trainer.url=http://127.0.0.1:${trainerPort}`,
    ];
    const env = { ...process.env, ATTUNE_HOME: home };
    const dev = spawn(process.execPath, [join(REPO_ROOT, 'bin', 'attune.js'), 'dev', ...set], {
      cwd: REPO_ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const up = new Promise<void>((resolve, reject) => {
      const onData = (c: Buffer) => {
        out += c.toString();
        if (out.includes('Press Ctrl-C to stop.')) resolve();
      };
      dev.stdout.on('data', onData);
      dev.stderr.on('data', (c: Buffer) => {
        out += c.toString();
      });
      dev.once('exit', (code) => reject(new Error(`attune dev exited (${code}):\n${out}`)));
    });
    const exited = new Promise<number | null>((resolve) => dev.once('exit', (code) => resolve(code)));
    try {
      await up;
      assert.match(out, new RegExp(`Web UI: +http://127\\.0\\.0\\.1:${uiPort}`));
      assert.equal(await listening(uiPort), true, 'the UI serves');

      const rollout = await attune(
        [
          'rollout',
          '--scenario',
          'test-venting-negative-baker',
          '--scenarios',
          FIXTURE_SCENARIOS,
          '--max-turns',
          '2',
          '--json',
          ...set,
        ],
        { ...env, ATTUNE_LOG_LEVEL: 'info' },
      );
      const rerr = rollout.stderr;
      assert.equal(rollout.code, 0, rerr);
      assert.equal((JSON.parse(rollout.stdout) as { turns: number }).turns, 2);
      assert.ok(!rerr.includes('starting them in this process'), 'the rollout ran on the workers of attune dev');
      assert.ok(!rerr.includes('starting embedded Temporal dev server'), 'the rollout used the running dev server');

      // A training run started with --detach is served by attune dev alone: its trainer and optimizer worker.
      const training = TINY_TRAINING('grpo', 1).flatMap((s) => ['--set', s]);
      const train = await attune(['train', '--name', 'dev-run', '--detach', ...training, ...set], env);
      assert.equal(train.code, 0, train.stderr);
      assert.ok(!train.stderr.includes('no worker outside this command'), train.stderr);
      const deadline = Date.now() + 120_000;
      for (;;) {
        const status = await attune(['status', 'dev-run', '--json', ...set], env);
        assert.equal(status.code, 0, status.stderr);
        const view = JSON.parse(status.stdout) as { phase: string; waitingOn: unknown[] };
        assert.deepEqual(view.waitingOn, [], 'every queue the run needs has a worker');
        if (view.phase === 'done') break;
        if (Date.now() > deadline) throw new Error(`the run never finished: ${status.stdout}`);
      }
      assert.equal(await listening(trainerPort), true, 'attune dev runs the trainer');

      dev.kill('SIGINT');
      assert.equal(await exited, 0);
      assert.equal(await listening(trainerPort), false);
      assert.equal(await listening(port), false);
      assert.equal(await listening(uiPort), false);
    } finally {
      dev.kill('SIGKILL');
      await fake.close();
    }
  });
});
