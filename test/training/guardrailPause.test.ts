import assert from 'node:assert/strict';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { attune } from '../cli/attuneProcess.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';
import { statusWhen } from '../support/statusWhen.js';

/** Trips on every step: any reply is longer than -1 characters. */
const ALWAYS = '{kind: above, name: replies-seen, action: pause, signal: replyLengthMean, value: -1}';
const WARN = '{kind: below, name: few-bigrams, action: warn, signal: distinctBigrams, value: 2}';

describe('guardrails pause a run for the operator', function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a tripped pause rule shows waiting-for-operator with its name and figures; attune resume goes on', async () => {
    const run = 'guard-pause';
    rig = await createTrainingRig({
      set: [...TINY_TRAINING('grpo', 2), `training.guardrails=[${ALWAYS}, ${WARN}]`, 'training.credit.mode=turn'],
    });
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    const cliArgs = (command: string) => [command, run, ...rig!.configSet.flatMap((s) => ['--set', s])];
    const env = { TEMPORAL_ADDRESS: rig.address };

    await statusWhen(rig, run, (s) => s.phase === 'waiting-for-operator', 'the guardrail to pause the run');
    const cli = await attune([...cliArgs('status'), '--json'], env);
    assert.equal(cli.code, 0, cli.stderr);
    const shown = JSON.parse(cli.stdout) as TrainingStatus;
    assert.equal(shown.phase, 'waiting-for-operator');
    assert.equal(shown.step, 2, 'step 1 was recorded before the check');
    assert.match(shown.blockedReason ?? '', /guardrail replies-seen at step 1: replyLengthMean [\d.]+ above -1/);
    assert.equal(shown.guardrails?.pausedBy?.rule, 'replies-seen');
    assert.equal(shown.guardrails?.pausedBy?.figures.limit, -1);
    assert.equal(typeof shown.guardrails?.pausedBy?.figures.replyLengthMean, 'number');
    assert.deepEqual(
      shown.guardrails?.warnings.map((w) => w.rule),
      ['few-bigrams'],
    );
    const [first] = await rig.metrics(run);
    assert.deepEqual(
      first?.guardrails?.map((g) => [g.rule, g.action]),
      [
        ['replies-seen', 'pause'],
        ['few-bigrams', 'warn'],
      ],
    );
    assert.ok(first?.signals && first.turnReward && first.turnReturn, 'signals and per-turn statistics recorded');

    const resumed = await attune(cliArgs('resume'), env);
    assert.equal(resumed.code, 0, resumed.stderr);
    const result = await handle.result();
    assert.equal(result.stepsApplied, 2, 'resumed past the rule, it warns on step 2 instead of pausing again');
    const second = (await rig.metrics(run))[1];
    assert.deepEqual(
      second?.guardrails?.map((g) => [g.rule, g.action]),
      [
        ['replies-seen', 'warn'],
        ['few-bigrams', 'warn'],
      ],
    );
  });
});
