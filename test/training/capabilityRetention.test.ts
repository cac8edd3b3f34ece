import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { loadCapabilityReport } from '../../src/client/capabilityEvaluations.js';
import { CAPABILITY_DATA_DIR, CAPABILITY_DATASETS } from '../../src/scenarios/capabilityDatasets.js';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { attune } from '../cli/attuneProcess.js';
import { testConfig } from '../support/rolloutRig.js';
import type { CallContext } from '../support/fakeOpenAI.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';

const DROP = '{kind: capabilityDrop, name: capability-drop, action: pause, points: 10}';

/** The vendored GSM8K problems' final answers, by the question's text. */
const ANSWERS = readFileSync(join(CAPABILITY_DATA_DIR, CAPABILITY_DATASETS.math.file), 'utf8')
  .trim()
  .split('\n')
  .map((line) => JSON.parse(line) as { prompt: string; expected: string });

/**
 * The policy on the fake vLLM: the base model (`fake-policy`) solves every maths problem, each
 * trained adapter (`RUN@k`) none; dialogue turns get an ordinary reply.
 */
function policy(ctx: CallContext): string {
  const problem = ANSWERS.find((p) => ctx.last.includes(p.prompt));
  if (!problem) return 'I hear you. That sounds hard.';
  return ctx.body.model.includes('@') ? 'I would rather talk about feelings.\n#### 0.5' : `#### ${problem.expected}`;
}

describe('capability retention in a training run (real dev server, real trainer, fake vLLM)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it("training.evalSuites: default none (the settings as before), each suite's data set when set, refused without evalEvery", () => {
    const set = [...TINY_TRAINING('grpo', 2), 'training.evalEvery=1'];
    const without = trainingSettingsFromConfig(testConfig('http://127.0.0.1:9/v1', set), 'r');
    assert.ok(!('evalSuites' in without), 'no key at all: the workflow input is unchanged');
    const withSuites = trainingSettingsFromConfig(
      testConfig('http://127.0.0.1:9/v1', [...set, 'training.evalSuites=[math, code]']),
      'r',
    );
    assert.deepEqual(
      withSuites.evalSuites?.map((s) => [s.suite, s.dataset.sha256, s.problemIds.length]),
      [
        ['math', CAPABILITY_DATASETS.math.sha256, 50],
        ['code', CAPABILITY_DATASETS.code.sha256, 50],
      ],
    );
    assert.throws(
      () => testConfig('http://127.0.0.1:9/v1', [...TINY_TRAINING('grpo', 2), 'training.evalSuites=[math]']),
      /evalSuites run with the evaluations: set evalEvery above 0/,
    );
    assert.throws(
      () => testConfig('http://127.0.0.1:9/v1', [...set, 'training.evalSuites=[math, math]']),
      /a suite is listed twice/,
    );
  });

  it('evalSuites scores maths at each evaluation beside the Sentient score; capability-drop pauses naming the suite, both scores and intervals', async () => {
    const run = 'retention-drop';
    rig = await createTrainingRig({
      behaviour: { policy },
      set: [
        ...TINY_TRAINING('grpo', 2),
        'training.publish.mode=vllm',
        'training.lora.r=8',
        'training.evalEvery=1',
        'training.evalSuites=[math]',
        `training.guardrails=[${DROP}]`,
      ],
    });
    await rig.startWorkers();
    const { handle } = await rig.start(run);

    const blocked = await statusWhen(
      rig,
      run,
      (s) => s.phase === 'waiting-for-operator' || s.phase === 'done',
      'the guardrail to pause, or the run to end',
    );
    assert.equal(blocked.phase, 'waiting-for-operator', 'the guardrail paused the run');
    assert.equal(blocked.guardrails?.pausedBy?.rule, 'capability-drop');
    assert.match(
      blocked.blockedReason ?? '',
      /^guardrail capability-drop at step 1: math 0\.0 % \[0\.0, 7\.1\] of 50 fell below the base's math 100\.0 % \[92\.9, 100\.0\] of 50: the base's lower bound is 85\.\d{3} points above the current upper bound \(limit 10\)/,
    );
    const figures = blocked.guardrails?.pausedBy?.figures ?? {};
    assert.deepEqual([figures.score, figures.baseScore, figures.count, figures.baseCount], [0, 100, 50, 50]);
    const cli = await attune(['status', run, '--json', ...rig.configSet.flatMap((s) => ['--set', s])], {
      TEMPORAL_ADDRESS: rig.address,
    });
    assert.equal(cli.code, 0, cli.stderr);
    assert.match((JSON.parse(cli.stdout) as TrainingStatus).blockedReason ?? '', /capability-drop .* math 0\.0 %/);

    // The step's record: the Sentient score and the suite's, with the base's beside it.
    const [first] = await rig.metrics(run);
    assert.ok(first?.eval, 'the Sentient evaluation ran too');
    assert.deepEqual(
      first.capability?.map((c) => [c.suite, c.evalId, c.score, c.solved, c.count, c.base?.score, c.base?.evalId]),
      [['math', `${run}-eval-s1-math`, 0, 0, 50, 1, `${run}-eval-s0-math`]],
    );
    assert.deepEqual(
      first.guardrails?.map((g) => [g.rule, g.action]),
      [['capability-drop', 'pause']],
    );
    // The suites asked the versions they name: the base model, then step 1's adapter.
    const base = await loadCapabilityReport(rig.store, `${run}-eval-s0-math`);
    assert.deepEqual([base.environment.policy.model, base.step, base.runName], ['fake-policy', 0, run]);
    const after = await loadCapabilityReport(rig.store, `${run}-eval-s1-math`);
    assert.deepEqual([after.environment.policy.model, after.step], [`${run}@1`, 1]);

    await handle.executeUpdate('resume');
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2);
    const second = (await rig.metrics(run))[1];
    assert.equal(second?.capability?.[0]?.base?.evalId, `${run}-eval-s0-math`, 'the base is scored once');
    assert.deepEqual(
      second?.guardrails?.map((g) => [g.rule, g.action]),
      [['capability-drop', 'warn']],
    );
  });
});
