import assert from 'node:assert/strict';
import { loadConfig } from '../../src/config/load.js';
import { callSeed } from '../../src/core/seeds.js';
import { planStepRollouts } from '../../src/core/training/stepPlan.js';
import type { Transcript } from '../../src/core/transcript.js';
import { requireScenarioLibrary } from '../../src/scenarios/library.js';
import type { CallContext, RecordedCall } from '../support/fakeOpenAI.js';
import { FIXTURE_SCENARIOS } from '../support/rolloutRig.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

const RUN = 'inflight-full';
const STEPS = 2;
const SEED = 7;
const IN_FLIGHT = [
  ...TINY_TRAINING('grpo', STEPS),
  'training.publish.mode=vllm',
  'training.maxStaleness=1',
  `training.seed=${SEED}`,
];

/** The seeds of step 2's first policy calls: the dialogues that run while step 1 trains and publishes. */
function stepTwoOpeningPolicySeeds(): Set<number> {
  const ids = requireScenarioLibrary(FIXTURE_SCENARIOS)
    .map((s) => s.id)
    .sort();
  const planned = planStepRollouts({ runName: RUN, seed: SEED, scenariosPerStep: 2, samplesPerScenario: 2 }, 2, ids);
  return new Set(planned.map((p) => callSeed(p.seed, 1, 'policy')));
}

describe('full fine-tuning with in-flight updates (maxStaleness 1): step 1 publishes while step 2 dialogues run (real dev server, real trainer, fake vLLM)', function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('a call frozen across the reload is asked again; every turn records the version that made its tokens, none older than the bound, and the trainer weighs each turn by its own version', async () => {
    assert.equal(
      loadConfig({ env: {}, set: ['training.publish.mode=vllm', 'training.maxStaleness=1'] }).training.maxStaleness,
      1,
      'the config takes full weights with maxStaleness 1',
    );
    const stepTwo = stepTwoOpeningPolicySeeds();
    let straddler: number | null = null;
    let heldArrived!: () => void;
    const held = new Promise<void>((resolve) => (heldArrived = resolve));
    rig = await createTrainingRig({
      set: IN_FLIGHT,
      behaviour: {
        // The reply names the weights it ended on, so a transcript shows which version wrote it.
        policy: (ctx: CallContext) => `I hear you (${ctx.turn}). [weights ${rig!.fake.fullWeights.version}]`,
        // Step 2's first opening policy call is held in flight until step 1's publish has paused vLLM.
        fault: ({ role, body }) => {
          if (role !== 'policy' || straddler !== null || !stepTwo.has(body.seed ?? -1)) return undefined;
          straddler = body.seed!;
          heldArrived();
          return 'hold';
        },
      },
    });
    const fake = rig.fake;
    const publishing = `${RUN}@0`;
    // The publish of run@1 (vLLM on run@0) pauses only once the held call is in flight, then lets it go on: frozen by the pause.
    fake.fullWeights.beforePause = async (version) => {
      if (version === publishing) await held;
    };
    fake.fullWeights.afterPause = (version) => {
      if (version === publishing) fake.release();
    };
    await rig.startWorkers();
    const { handle } = await rig.start(RUN);
    const result = await handle.result();
    assert.equal(result.stepsApplied, STEPS);
    assert.equal(result.version, `${RUN}@${STEPS}`);
    assert.equal((await rig.trainer.runState(RUN)).step, STEPS, 'the trainer applied each step once');

    // The publish of run@1 froze the calls in flight (mode=keep), and dropped the old weights' cache.
    const pauses = fake.fullWeights.calls.filter((c) => c.route.startsWith('/pause'));
    assert.ok(
      pauses.some((c) => c.route === '/pause?mode=keep' && c.version === publishing),
      JSON.stringify(pauses),
    );
    assert.ok(
      pauses.every((c) => c.route === '/pause?mode=keep'),
      JSON.stringify(pauses),
    );
    assert.ok(fake.fullWeights.prefixResets.includes(`loading ${RUN}@1`));

    // The held call straddled the reload: made twice, the same request; the second on run@1 alone.
    const policyCalls = fake.calls.filter((c) => c.role === 'policy' && c.status === 200);
    const straddling = policyCalls.filter((c) => c.seed === straddler);
    assert.deepEqual(
      straddling.map((c) => c.weights),
      [[`${RUN}@0`, `${RUN}@1`], [`${RUN}@1`]],
      'the straddling call was asked again at once',
    );
    assert.equal(straddling[0]!.key, straddling[1]!.key, 'the same request');

    // Every turn: its version is the one the fake served its request under, from start to end, and within the bound.
    const keys = await rig.store.list(`rollouts/${RUN}`);
    assert.equal(keys.length, STEPS * 4, 'each dialogue once: none restarted');
    let straddlerTurn: Transcript['turns'][number] | undefined;
    const versionsOfStep = new Map<number, Set<string>>();
    for (const key of keys) {
      const transcript = await rig.store.getJson<Transcript>(key);
      assert.ok(transcript && transcript.step !== null, key);
      assert.ok(!/--a\d+$/.test(transcript.rolloutId), `${key}: a first attempt`);
      for (const turn of transcript.turns) {
        const recorded = turn.policy.weightVersion;
        assert.ok(recorded !== undefined, `${key} turn ${turn.turn}`);
        const step = Number(/@(\d+)$/.exec(recorded)![1]);
        assert.ok(
          step <= transcript.step - 1 && transcript.step - 1 - step <= 1,
          `${key} turn ${turn.turn}: ${recorded} is outside step ${transcript.step}'s bound`,
        );
        assert.ok(turn.policy.raw.endsWith(`[weights ${recorded}]`), `${key} turn ${turn.turn}: ${turn.policy.raw}`);
        const served = policyCalls.filter(
          (c: RecordedCall) =>
            c.answer === turn.policy.raw && JSON.stringify(c.messages) === JSON.stringify(turn.promptMessages),
        );
        assert.ok(
          served.some((c) => JSON.stringify(c.weights) === JSON.stringify([recorded])),
          `${key} turn ${turn.turn}: recorded ${recorded}, served ${JSON.stringify(served.map((c) => c.weights))}`,
        );
        if (served.some((c) => c.seed === straddler)) straddlerTurn = turn;
        versionsOfStep.set(transcript.step, (versionsOfStep.get(transcript.step) ?? new Set()).add(recorded));
      }
    }
    assert.equal(straddlerTurn?.policy.weightVersion, `${RUN}@1`, "the straddler's turn records its second ask");
    assert.deepEqual([...versionsOfStep.get(1)!], [`${RUN}@0`]);
    assert.ok(versionsOfStep.get(2)!.has(`${RUN}@1`), 'step 2 sampled run@1 once it was published');

    // Step 2 trains weights 1: its turns on run@1 are on-policy, those on run@0 one version stale.
    const metrics = await rig.metrics(RUN);
    assert.deepEqual(
      metrics.map((m) => m.policyVersion),
      [`${RUN}@0`, `${RUN}@0`],
      'each step records the version its rollouts started on',
    );
    const histogram = metrics[1]!.trainer.staleness_histogram ?? {};
    assert.ok((histogram['0'] ?? 0) > 0, `step 2's staleness per turn: ${JSON.stringify(histogram)}`);
    assert.ok(
      Object.keys(histogram).every((k) => Number(k) <= 1),
      JSON.stringify(histogram),
    );
  });
});
