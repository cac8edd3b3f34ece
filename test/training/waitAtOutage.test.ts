import assert from 'node:assert/strict';
import type { WaitingRollout } from '../../src/client/waitingRollouts.js';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes.js';
import { continueSignal } from '../../src/workflows/outageWait.js';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { attune } from '../cli/attuneProcess.js';
import type { CallContext } from '../support/fakeOpenAI.js';
import { assertSameEssentials, essentials } from '../support/runEssentials.js';
import { statusWhen } from '../support/statusWhen.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const STEPS = 2;
/** GRPO at temperature 1 (TINY_TRAINING's), 4 dialogues a step of 4 turns, few and quick simulator retries. */
const SET = [...TINY_TRAINING('grpo', STEPS), 'training.dialogue.maxTurns=4', 'simulator.retry.maximumAttempts=2'];
const DIALOGUES = 4;

type Essentials = ReturnType<typeof essentials>;

describe('training: dialogues wait at a call whose endpoint is down past its retries, and go on from it (real dev server)', function () {
  this.timeout(900_000);
  let rig: TrainingRig | undefined;
  let baseline: Promise<Essentials> | undefined;
  /** While true the simulator answers 500 to the analysis of turn 3. */
  let down = false;
  const behaviour = {
    analysis: (ctx: CallContext) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
    fault: (ctx: CallContext) => (down && ctx.role === 'analysis' && ctx.turn === 3 ? ('500' as const) : undefined),
  };

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    down = false;
  });

  /** The undisturbed run of the same seed and config, once. */
  function undisturbed(): Promise<Essentials> {
    baseline ??= (async () => {
      const plain = await createTrainingRig({ set: SET, behaviour });
      try {
        await plain.startWorkers();
        const { handle } = await plain.start('wait-baseline');
        assert.equal((await handle.result()).stepsApplied, STEPS);
        return essentials(await plain.metrics('wait-baseline'));
      } finally {
        await plain.close();
      }
    })();
    return baseline;
  }

  const cli = (args: string[]) =>
    attune([...args, ...rig!.configSet.flatMap((s) => ['--set', s])], { TEMPORAL_ADDRESS: rig!.address });

  /** Waiting dialogues as `attune rollouts list NAME --waiting --json` gives them, once visibility shows `n`. */
  async function listedWaiting(run: string, n: number): Promise<(WaitingRollout & { uiUrl: string | null })[]> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const out = await cli(['rollouts', 'list', run, '--waiting', '--json']);
      assert.equal(out.code, 0, out.stderr);
      const rows = JSON.parse(out.stdout) as (WaitingRollout & { uiUrl: string | null })[];
      if (rows.length === n) return rows;
      if (Date.now() > deadline) throw new Error(`expected ${n} waiting dialogues, listed ${out.stdout}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** Metrics equal to the undisturbed run's, no simulator call answered twice, every rollout id the first attempt's. */
  async function expectUndisturbed(run: string): Promise<void> {
    const result = await rig!.client.workflow.getHandle(trainingWorkflowId(run)).result();
    assert.equal(result.stepsApplied, STEPS);
    assertSameEssentials(essentials(await rig!.metrics(run)), await undisturbed());
    const twice = [...rig!.fake.successCountsByKey()].filter(([, n]) => n > 1);
    assert.deepEqual(twice, [], 'no finished call was made again');
    const ids: string[] = [];
    const query = `${SEARCH_ATTRIBUTES.kind.name} = 'rollout' AND ${SEARCH_ATTRIBUTES.runName.name} = '${run}'`;
    for await (const info of rig!.client.workflow.list({ query })) ids.push(info.workflowId);
    assert.equal(ids.length, STEPS * DIALOGUES, `one rollout per planned dialogue: ${ids.join(', ')}`);
    assert.ok(
      ids.every((id) => !/--a\d+$/.test(id)),
      `no dialogue ran again as a new attempt: ${ids.join(', ')}`,
    );
  }

  /** After the undisturbed run, starts `run` with the simulator down; resolves once every dialogue of step 1 waits. */
  async function startWithSimulatorDown(run: string): Promise<TrainingRig> {
    await undisturbed();
    rig = await createTrainingRig({ set: SET, behaviour });
    down = true;
    await rig.startWorkers();
    await rig.start(run);
    await statusWhen(rig, run, (s) => s.rollouts.waiting === DIALOGUES, 'every dialogue of step 1 to wait', 300_000);
    return rig;
  }

  it('simulator down in turn 3 of step 1: status shows waiting-for-operator with the dialogues counted; attune resume completes the run as if undisturbed', async () => {
    const run = 'wait-resume';
    rig = await startWithSimulatorDown(run);

    const shown = await cli(['status', run, '--json']);
    assert.equal(shown.code, 0, shown.stderr);
    const status = JSON.parse(shown.stdout) as TrainingStatus;
    assert.equal(status.phase, 'waiting-for-operator');
    assert.equal(status.step, 1);
    assert.equal(status.rollouts.waiting, DIALOGUES);
    assert.match(status.blockedReason ?? '', /4 dialogues wait for an operator .*turn 3 · analysis.*HTTP 500/);
    const listed = await listedWaiting(run, DIALOGUES);
    assert.deepEqual(
      listed.map((r) => r.step),
      [1, 1, 1, 1],
    );
    // Through TEMPORAL_ADDRESS the CLI knows no UI for that server: no link, rather than a guessed one.
    assert.deepEqual(
      listed.map((r) => r.uiUrl),
      [null, null, null, null],
    );
    // Through the local dev server's port the CLI links each dialogue in that server's UI.
    const uiPort = 18_233;
    const local = await attune(
      [
        ...['rollouts', 'list', run, '--waiting', '--json'],
        ...rig.configSet.flatMap((s) => ['--set', s]),
        ...['--set', `temporal.devServer.port=${new URL(`http://${rig.address}`).port}`],
        ...['--set', `temporal.devServer.uiPort=${uiPort}`],
      ],
      { TEMPORAL_ADDRESS: '' },
    );
    assert.equal(local.code, 0, local.stderr);
    const linked = JSON.parse(local.stdout) as (WaitingRollout & { uiUrl: string | null })[];
    assert.deepEqual(
      linked.map((r) => r.uiUrl),
      linked.map((r) => `http://127.0.0.1:${uiPort}/namespaces/default/workflows/${encodeURIComponent(r.rolloutId)}`),
    );
    assert.deepEqual(linked.map((r) => r.rolloutId).sort(), listed.map((r) => r.rolloutId).sort());
    assert.equal((await rig.trainer.runState(run)).step, 0, 'no step was applied while its dialogues wait');

    down = false;
    const resumed = await cli(['resume', run]);
    assert.equal(resumed.code, 0, resumed.stderr);
    await expectUndisturbed(run);
  });

  it('the same, each dialogue continued by the `continue` signal sent to that rollout alone (as from the Temporal UI)', async () => {
    const run = 'wait-signal';
    rig = await startWithSimulatorDown(run);
    const listed = await listedWaiting(run, DIALOGUES);

    down = false;
    const [first, ...rest] = listed;
    await rig.client.workflow.getHandle(first!.rolloutId).signal(continueSignal);
    const fewer = await statusWhen(
      rig,
      run,
      (s) => s.rollouts.waiting === DIALOGUES - 1,
      'one dialogue to go on',
      120_000,
    );
    assert.equal(fewer.phase, 'waiting-for-operator');
    for (const r of rest) await rig.client.workflow.getHandle(r.rolloutId).signal(continueSignal);
    await expectUndisturbed(run);
  });
});
