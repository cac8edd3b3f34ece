import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  buildCapabilityInput,
  loadCapabilityReport,
  startCapabilityEvaluation,
} from '../../src/client/capabilityEvaluations.js';
import { CAPABILITY_DATA_DIR, CAPABILITY_DATASETS } from '../../src/scenarios/capabilityDatasets.js';
import { ConnectionWitness, plantedCodeAnswers } from '../support/capabilityAnswers.js';
import { buildEvaluationInput } from '../../src/client/evaluations.js';
import { createRolloutRig, FIXTURE_SCENARIOS, testConfig, type RolloutRig } from '../support/rolloutRig.js';

describe('capability suites (workflow)', function () {
  this.timeout(240_000);
  let rig: RolloutRig | undefined;
  let witness: ConnectionWitness;
  before(async () => {
    witness = await ConnectionWitness.start();
  });
  after(async () => {
    await witness.close();
  });
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('asks the policy the Sentient evaluation asks: the configured one, or a trained version', () => {
    const config = testConfig('http://127.0.0.1:9/v1', ['trainer.policyBaseURL=http://127.0.0.1:8000/v1']);
    for (const policy of [undefined, 'my-run@3']) {
      const request = policy ? { policy } : {};
      const sentient = buildEvaluationInput(config, { scenarios: FIXTURE_SCENARIOS, ...request });
      const suite = buildCapabilityInput(config, { suite: 'math', ...request });
      assert.deepEqual(suite.settings.policy, sentient.settings.policy);
    }
    assert.equal(buildCapabilityInput(config, { suite: 'code', policy: 'my-run@3' }).settings.policy.model, 'my-run@3');
    assert.throws(() => buildCapabilityInput(config, { suite: 'math', only: ['q', 'q'] }), /not in the math data set/);
    assert.throws(() => buildCapabilityInput(config, { suite: 'math', evalId: 'a/b' }), /evaluation name "a\/b"/);
  });

  it('code: runs each answer against its tests in the sandbox; a socket to loopback never connects and fails', async () => {
    rig = await createRolloutRig({ behaviour: { policy: plantedCodeAnswers(witness.port) } });
    await rig.startWorkers();
    const input = buildCapabilityInput(rig.config, {
      suite: 'code',
      evalId: `code-suite-${Date.now()}`,
      only: ['HumanEval/0', 'HumanEval/1', 'HumanEval/2'],
    });
    const summary = await (await startCapabilityEvaluation(rig.env.client, rig.config, input)).result();
    assert.deepEqual(
      { solved: summary.solved, count: summary.count, failed: summary.failed, score: summary.score },
      { solved: 1, count: 3, failed: 0, score: 1 / 3 },
    );
    assert.equal(witness.connections, 0, 'the planted connection reached the listener');
    const report = await loadCapabilityReport(rig.store, input.evalId);
    assert.deepEqual(
      report.problems.map((p) => (p.status === 'ok' ? [p.problemId, p.solved, p.outcome] : [p.problemId, p.error])),
      [
        ['HumanEval/0', true, 'passed'],
        ['HumanEval/1', false, 'failed'],
        ['HumanEval/2', false, 'failed'],
      ],
    );
    const planted = report.problems[2]!;
    assert.ok(planted.status === 'ok');
    // Stopped at the connection: no network in the sandbox.
    const record = await rig.store.getJson<{ run: { stderrTail: string } }>(planted.artifact);
    assert.match(record.run.stderrTail, /OSError|Network is unreachable|ConnectionRefused/);
    assert.ok(report.ci && report.ci.low > 0 && report.ci.high < 1, JSON.stringify(report.ci));
    const env = report.environment;
    assert.equal(env.dataset.sha256, CAPABILITY_DATASETS.code.sha256);
    assert.deepEqual(env.problemIds, ['HumanEval/0', 'HumanEval/1', 'HumanEval/2']);
    assert.deepEqual(env.decoding, { temperature: 0, maxTokens: 512, seed: rig.config.evaluation.seed });
    assert.deepEqual(env.policy, { baseURL: rig.fake.url, model: 'fake-policy' });
    assert.ok(env.sandbox?.confinement.some((c) => c.startsWith('namespaces:') && c.includes('net')));
    // The policy was asked greedily, with the suite's token limit, once per problem.
    const asked = rig.fake.calls.filter((c) => c.role === 'policy' && c.status === 200);
    assert.equal(asked.length, 3);
    const bodies = asked.map((c) => c.messages);
    assert.ok(bodies.every((m) => m.length === 1 && m[0]!.role === 'user'));
  });

  it('maths: exact match of the final answer; a problem whose call is refused is reported and left out', async () => {
    rig = await createRolloutRig({
      behaviour: {
        policy: (ctx) => (ctx.last.includes('Melanie') ? 'She had 18 at first.\n#### 18' : 'The answer is 4.'),
        // The policy endpoint refuses the third problem outright (not retried).
        fault: (ctx) => (ctx.role === 'policy' && ctx.last.includes('Doubtfire') ? '401' : undefined),
      },
    });
    await rig.startWorkers();
    const rows = readFileSync(join(CAPABILITY_DATA_DIR, CAPABILITY_DATASETS.math.file), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { id: string });
    const input = buildCapabilityInput(rig.config, {
      suite: 'math',
      evalId: `math-suite-${Date.now()}`,
      only: rows.slice(0, 3).map((r) => r.id),
    });
    const summary = await (await startCapabilityEvaluation(rig.env.client, rig.config, input)).result();
    assert.deepEqual([summary.solved, summary.count, summary.failed, summary.score], [1, 2, 1, 0.5]);
    const report = await loadCapabilityReport(rig.store, input.evalId);
    assert.deepEqual(
      report.problems.map((p) => (p.status === 'ok' ? p.detail : 'failed')),
      ['answer 18 (marker)', 'answer 4 (phrase), expected 5', 'failed'],
    );
    const refused = report.problems[2]!;
    assert.match(refused.status === 'failed' ? refused.error : '', /policy endpoint .*HTTP 401/);
    const file = readFileSync(join(CAPABILITY_DATA_DIR, CAPABILITY_DATASETS.math.file));
    assert.equal(report.environment.dataset.sha256, createHash('sha256').update(file).digest('hex'));
    assert.equal(report.environment.sandbox, undefined);
    assert.match(report.environment.prompt.template, /#### <number>/);
  });
});
