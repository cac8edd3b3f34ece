import assert from 'node:assert/strict';
import type { Transcript } from '../../src/core/transcript.js';
import type { TrainingStatus } from '../../src/workflows/training.js';
import { eventually } from '../support/eventually.js';
import type { FakeBehaviour, RecordedCall } from '../support/fakeOpenAI.js';
import { trainerLedger } from '../support/runEssentials.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

/** Full weights published to the fake vLLM from the trainer's exports, steps that take the first finished. */
const OVERLAPPING = (steps: number) => [
  ...TINY_TRAINING('grpo', steps),
  'training.publish.mode=vllm',
  'training.maxStaleness=1',
  'training.stepDialogues=firstFinished',
  'training.maxInFlight=8',
];
const BEHAVIOUR: FakeBehaviour = {
  latencyFor: (ctx) => ((ctx.body.seed ?? 0) % 3 === 0 ? 400 : 20),
  analysis: (ctx) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
};

/**
 * Holds the publish of step 1 at vLLM's `/pause` (vLLM then serves `run@0`, the base its first calls
 * reloaded from the trainer) until `release()`.
 */
function holdFirstPublish(rig: TrainingRig, run: string): { release: () => void } {
  let release!: () => void;
  const held = new Promise<void>((resolve) => (release = resolve));
  rig.fake.fullWeights.beforePause = async (serving) => {
    if (serving === `${run}@0`) await held;
  };
  return { release };
}

/** Resolves once the trainer has applied `step` of the run (its run may not exist yet). */
function trainerApplied(rig: TrainingRig, run: string, step: number): Promise<true> {
  return eventually(
    `the trainer to apply step ${step} while step 1's publish is held`,
    async () => {
      const state = await rig.trainer.runState(run).catch(() => null);
      return state && state.step >= step ? true : undefined;
    },
    180_000,
  );
}

describe("a step's publish while the optimizer trains the next (first-finished steps, full weights from the trainer's exports; real dev server, real trainer, fake vLLM)", function () {
  this.timeout(600_000);
  let rig: TrainingRig | undefined;
  let publish: { release: () => void } | undefined;

  afterEach(async () => {
    // A failed test must not leave the publish held: the workers' shutdown would wait for it.
    publish?.release();
    await rig?.close();
    rig = undefined;
  });

  /** Starts a run of `steps` steps with step 1's publish held, once the trainer has applied step 2 meanwhile. */
  async function startWithFirstPublishHeld(run: string, steps: number) {
    rig = await createTrainingRig({ set: OVERLAPPING(steps), behaviour: BEHAVIOUR });
    publish = holdFirstPublish(rig, run);
    await rig.startWorkers();
    const { handle } = await rig.start(run);
    await trainerApplied(rig, run, 2);
    return { running: rig, handle };
  }

  it('trains step 2 while step 1 is still being published, records each step once after its publish, and every turn records a version vLLM served within the bound', async () => {
    const run = 'publish-overlap';
    const { running, handle } = await startWithFirstPublishHeld(run, 3);
    assert.deepEqual(await running.metrics(run), [], 'step 1 is recorded only once its publish is done');
    assert.equal(running.fake.fullWeights.version, `${run}@0`, 'vLLM still serves the base');
    const held = await handle.query<TrainingStatus>('trainingStatus');
    assert.deepEqual(held.finishing, { step: 1, version: `${run}@1` }, 'status names the step published beside step 2');
    publish!.release();

    const result = await handle.result();
    assert.equal(
      (await handle.query<TrainingStatus>('trainingStatus')).finishing,
      undefined,
      'none once the run ended',
    );
    assert.equal(result.stepsApplied, 3);
    assert.equal(result.version, `${run}@3`, 'the last step is published before the run ends');
    assert.equal(running.fake.fullWeights.version, `${run}@3`);
    assert.deepEqual(
      (await trainerLedger(running.trainer.stateDir, run)).map((l) => l.step),
      [1, 2, 3],
      'the trainer applied each step once',
    );
    const metrics = await running.metrics(run);
    assert.deepEqual(
      metrics.map((m) => m.step),
      [1, 2, 3],
      'each step recorded once',
    );

    // Every turn trained on records a version vLLM served for its request, within the bound of the step that took it.
    const takenBy = new Map(metrics.flatMap((m) => (m.dialogues?.taken ?? []).map((id) => [id, m.step] as const)));
    const policyCalls = running.fake.calls.filter((c: RecordedCall) => c.role === 'policy' && c.status === 200);
    let turns = 0;
    for (const key of await running.store.list(`rollouts/${run}`)) {
      const t = await running.store.getJson<Transcript>(key);
      const step = takenBy.get(t.rolloutId);
      if (step === undefined) continue;
      for (const turn of t.turns) {
        const recorded = turn.policy.weightVersion!;
        const sampled = recorded.startsWith(`${run}@`) ? Number(recorded.split('@')[1]) : 0;
        assert.ok(step - 1 - sampled <= 1, `${t.rolloutId} turn ${turn.turn}: ${recorded}, trained by step ${step}`);
        assert.ok(
          policyCalls.some(
            (c) =>
              c.answer === turn.policy.raw &&
              JSON.stringify(c.messages) === JSON.stringify(turn.promptMessages) &&
              JSON.stringify(c.weights) === JSON.stringify([recorded]),
          ),
          `${t.rolloutId} turn ${turn.turn}: ${recorded} served its request`,
        );
        turns++;
      }
    }
    assert.ok(turns >= 3 * 4, `${turns} turns checked`);
  });

  it('a stop while step 1 is published publishes and records the step the optimizer applied meanwhile, then ends', async () => {
    const run = 'publish-overlap-stop';
    const { running, handle } = await startWithFirstPublishHeld(run, 5);
    await handle.executeUpdate<TrainingStatus, []>('stop');
    publish!.release();

    const result = await handle.result();
    assert.equal(result.stopped, true);
    const applied = (await running.trainer.runState(run)).step;
    assert.equal(applied, 2, 'no step optimized after the stop');
    assert.deepEqual(
      (await running.metrics(run)).map((m) => m.step),
      [1, 2],
      'every step the trainer applied is recorded',
    );
    assert.equal(result.stepsApplied, 2);
    assert.equal(running.fake.fullWeights.version, `${run}@2`, 'and published');
  });
});
