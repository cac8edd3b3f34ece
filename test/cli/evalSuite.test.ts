import assert from 'node:assert/strict';
import { CAPABILITY_DATASETS } from '../../src/scenarios/capabilityDatasets.js';
import { ConnectionWitness, plantedCodeAnswers } from '../support/capabilityAnswers.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { testConfigSet } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { attune } from './attuneProcess.js';

/** What `attune eval --suite ... --json` prints: the report, as a script reads it. */
interface SuiteJson {
  kind: string;
  suite: string;
  score: number;
  ci: { low: number; high: number };
  interval: string;
  solved: number;
  count: number;
  failed: number;
  environment: {
    dataset: { name: string; file: string; sha256: string; source: string; license: string; problems: number };
    problemIds: string[];
    prompt: { template: string; hash: string };
    decoding: { temperature: number; maxTokens: number; seed: number };
    policy: { baseURL: string; model: string };
    sandbox: { timeoutMs: number; confinement: string[] };
    attuneVersion: string;
  };
  problems: { problemId: string; status: string; solved: boolean; outcome: string; detail: string }[];
}

describe('attune eval --suite', function () {
  this.timeout(180_000);
  let fake: FakeOpenAIServer;
  let witness: ConnectionWitness;
  let address: string;
  before(async () => {
    address = (await sharedTestEnv()).address;
    witness = await ConnectionWitness.start();
    fake = await FakeOpenAIServer.start({ policy: plantedCodeAnswers(witness.port) });
  });
  after(async () => {
    await fake.close();
    await witness.close();
  });

  it('code --json: a score with its interval and a count; the planted connection fails and never arrives', async () => {
    const only = 'HumanEval/0,HumanEval/1,HumanEval/2';
    const set = testConfigSet(fake.url).flatMap((s) => ['--set', s]);
    const result = await attune(['eval', '--suite', 'code', '--only', only, '--json', ...set], {
      TEMPORAL_ADDRESS: address,
    });
    assert.equal(result.code, 0, result.stderr);
    const report = JSON.parse(result.stdout) as SuiteJson;
    assert.equal(report.kind, 'attune.capability');
    assert.equal(report.suite, 'code');
    assert.deepEqual([report.solved, report.count, report.failed], [1, 3, 0]);
    assert.equal(report.score, 1 / 3);
    assert.equal(report.interval, 'wilson-95');
    assert.ok(report.ci.low < report.score && report.score < report.ci.high, JSON.stringify(report.ci));
    assert.deepEqual(
      report.problems.map((p) => [p.problemId, p.outcome]),
      [
        ['HumanEval/0', 'passed'],
        ['HumanEval/1', 'failed'],
        ['HumanEval/2', 'failed'],
      ],
    );
    assert.equal(witness.connections, 0, 'the planted connection left the sandbox');
    const env = report.environment;
    assert.deepEqual(
      { ...env.dataset, source: undefined },
      { ...CAPABILITY_DATASETS.code, source: undefined, problems: 50 },
    );
    assert.match(env.prompt.hash, /^[0-9a-f]{8}$/);
    assert.deepEqual([env.decoding.temperature, env.decoding.maxTokens], [0, 512]);
    assert.deepEqual(env.policy, { baseURL: fake.url, model: 'fake-policy' });
    assert.equal(env.sandbox.timeoutMs, 10_000);
    assert.match(env.attuneVersion, /^\d+\.\d+\.\d+/);
  });

  it('refuses an unknown suite, a problem not in the data set, and the Sentient flags', async () => {
    const set = testConfigSet(fake.url).flatMap((s) => ['--set', s]);
    // Each in its own process, all at once: each spends its time loading the CLI's modules.
    const [chess, split, missing] = await Promise.all([
      attune(['eval', '--suite', 'chess', ...set]),
      attune(['eval', '--suite', 'math', '--split', 'eval', ...set]),
      attune(['eval', '--suite', 'code', '--only', 'HumanEval/99', ...set]),
    ]);
    assert.equal(chess.code, 2);
    assert.match(chess.stderr, /--suite "chess": one of math, code/);
    assert.equal(split.code, 2);
    assert.match(split.stderr, /not with --suite/);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /problem "HumanEval\/99" is not in the code data set/);
  });
});
