import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadConfig } from '../../src/config/load.js';
import { freePort } from '../../src/temporal/devServer.js';
import { DEFAULT_GUARDRAILS } from '../../src/core/training/guardrails.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { patchIds } from '../support/historyMarkers.js';
import { simulatorPromptHash } from '../../src/core/prompts/simulatorPromptHash.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { attune, startAttune } from './attuneProcess.js';

const QUICK_START = 'configs/tiny.yaml';

describe('the quick start as shipped: configs/tiny.yaml, guardrails included, through the CLI', function () {
  this.timeout(900_000);
  let fake: FakeOpenAIServer;
  before(async () => {
    fake = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 3 }) });
  });
  after(async () => {
    await fake?.close();
  });

  it('keeps the default guardrails and trains every step of the config to the end', async () => {
    assert.deepEqual(
      loadConfig({ file: QUICK_START, env: {} }).training.guardrails,
      DEFAULT_GUARDRAILS,
      'the defaults, as shipped',
    );
    const { address } = await sharedTestEnv();
    const env = { ATTUNE_HOME: mkdtempSync(join(tmpdir(), 'attune-quick-home-')), TEMPORAL_ADDRESS: address };
    // Only where the test's own servers are: the simulator (the fake OpenAI server), the trainer's
    // port and the queues. Steps, guardrails and the rest are the file's.
    const local = [
      `simulator.baseURL=${fake.url}`,
      'simulator.model=fake-simulator',
      `trainer.url=http://127.0.0.1:${await freePort()}`,
      `temporal.taskQueuePrefix=quick${process.pid}-`,
    ].flatMap((s) => ['--set', s]);
    const name = 'quick-start';
    const train = startAttune(['train', '--config', QUICK_START, '--name', name, ...local], env);
    // A run that pauses for the operator would wait for ever: fail with what it waits on instead.
    const paused = train.stderrMatches(/waiting-for-operator/).then(
      () => true,
      () => false,
    );
    if (await Promise.race([paused, train.done.then(() => false)])) {
      const status = await attune(['status', name, '--config', QUICK_START, ...local], env);
      await attune(['stop', name, '--config', QUICK_START, ...local], env);
      await train.done;
      assert.fail(`the quick start paused for the operator:\n${status.stdout}`);
    }
    const done = await train.done;
    assert.equal(done.code, 0, done.stderr);
    const steps = loadConfig({ file: QUICK_START, env: {} }).training.steps;
    assert.match(
      done.stdout,
      new RegExp(`^Run ${name}: ${steps} step\\(s\\) applied; final version ${name}@${steps}$`, 'm'),
    );

    const metricsFile = /^Metrics: (.+)$/m.exec(done.stdout)?.[1];
    assert.ok(metricsFile, done.stdout);
    const records = readFileSync(metricsFile, 'utf8')
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as StepMetricsRecord);
    assert.deepEqual(
      records.map((r) => r.step),
      Array.from({ length: steps }, (_, i) => i + 1),
    );
    for (const r of records) {
      // publish: trainer serves its own weights (no publish to time); the trainer times its answer.
      assert.equal(r.publishLatencyMs, null, `step ${r.step}`);
      assert.ok(
        typeof r.commitToAnswerMs === 'number' && r.commitToAnswerMs >= 0,
        `step ${r.step}: ${r.commitToAnswerMs}`,
      );
      // Every reward names what it was measured in: this run's simulated user, its prompts, the protocol.
      const config = loadConfig({ file: QUICK_START, env: {} });
      assert.deepEqual(r.environment?.simulator, { baseURL: fake.url, model: 'fake-simulator' }, `step ${r.step}`);
      assert.equal(r.environment?.promptHash, simulatorPromptHash(), `step ${r.step}`);
      assert.equal(r.environment?.protocol.maxTurns, config.training.dialogue.maxTurns, `step ${r.step}`);
      assert.equal(r.environment?.protocol.initialEmotion, config.training.dialogue.initialEmotion, `step ${r.step}`);
    }

    // The guardrails were checked on the run's steps: the check's patch marker is in its history.
    const connection = await Connection.connect({ address });
    try {
      const history = await new Client({ connection }).workflow.getHandle(trainingWorkflowId(name)).fetchHistory();
      assert.ok(patchIds(history.events ?? []).includes('training-guardrails'), 'the guardrails were checked');
    } finally {
      await connection.close();
    }
  });
});
