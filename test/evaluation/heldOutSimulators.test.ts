import assert from 'node:assert/strict';
import { evaluationKey } from '../../src/artifacts/keys.js';
import { buildEvaluationInput, startEvaluation } from '../../src/client/evaluations.js';
import { loadConfig } from '../../src/config/load.js';
import type { EvaluationReport } from '../../src/core/evaluationReport.js';
import { completeEvaluationReport } from '../../src/core/evaluationReport.js';
import type { Transcript } from '../../src/core/transcript.js';
import { renderEvaluationTable } from '../../src/cli/render/evaluationTable.js';
import { evaluationProgressQuery } from '../../src/workflows/evaluation.js';
import { FakeOpenAIServer } from '../support/fakeOpenAI.js';
import { createRolloutRig, FIXTURE_SCENARIOS, testConfigSet, type RolloutRig } from '../support/rolloutRig.js';
import { sharedTestEnv } from '../support/temporalEnv.js';
import { attune } from '../cli/attuneProcess.js';
import { answered } from '../support/eventually.js';

// Three turns from emotion 40: the training simulator's +5 a turn ends at 55, the held-out one's +2 at 46.
const TURNS = 3;
const TRAINING_END = 40 + 5 * TURNS;
const HELD_OUT_END = 40 + 2 * TURNS;
const SCENARIOS = ['test-not-my-fault-avoidant-cyclist', 'test-venting-negative-baker'];

function heldOutSet(url: string, model = 'fake-model'): string {
  return `evaluation.simulators=[{"name":"alt","baseURL":"${url}","model":"${model}"}]`;
}

describe('held-out simulators (evaluation.simulators)', function () {
  this.timeout(240_000);
  let rig: RolloutRig | undefined;
  let heldOut: FakeOpenAIServer | undefined;
  afterEach(async () => {
    await rig?.close();
    await heldOut?.close();
    rig = undefined;
    heldOut = undefined;
  });

  it('scores every dialogue with each simulator: per-simulator scores, intervals and gap; the training pass is the evaluation without them', async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 5 }) },
      set: [`evaluation.dialogue.maxTurns=${TURNS}`],
    });
    heldOut = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 2 }) });
    await rig.startWorkers();
    const stamp = Date.now();
    const plain = buildEvaluationInput(rig.config, { scenarios: FIXTURE_SCENARIOS, evalId: `plain-${stamp}` });
    assert.equal(plain.simulators, undefined);
    await (await startEvaluation(rig.env.client, rig.config, plain)).result();
    const plainCalls = rig.fake.calls.length;

    const config = loadConfig({ env: {}, set: [...rig.configSet, heldOutSet(heldOut.url)] });
    const input = buildEvaluationInput(config, { scenarios: FIXTURE_SCENARIOS, evalId: `held-out-${stamp}` });
    const handle = await startEvaluation(rig.env.client, config, input);
    const summary = await handle.result();

    // Each simulator's analysis calls reach its own endpoint: 3 per dialogue, 2 dialogues each.
    assert.equal(heldOut.count('analysis'), 2 * TURNS, 'the held-out simulator analyses its own pass');
    assert.equal(heldOut.count('policy'), 0, 'the policy stays on its endpoint');
    const mine = rig.fake.calls.slice(plainCalls);
    assert.equal(mine.filter((c) => c.role === 'analysis').length, 2 * TURNS, 'the training simulator: its pass only');
    // The policy side is identical: every policy request's seed comes twice, once per simulator.
    const policySeeds = mine.filter((c) => c.role === 'policy').map((c) => c.seed);
    assert.equal(policySeeds.length, 2 * 2 * TURNS);
    for (const seed of new Set(policySeeds))
      assert.equal(policySeeds.filter((s) => s === seed).length, 2, `policy seed ${seed} once per simulator`);

    assert.deepEqual(summary.simulators, [
      { name: 'training', score: TRAINING_END, count: 2, failed: 0, gap: 0 },
      { name: 'alt', score: HELD_OUT_END, count: 2, failed: 0, gap: TRAINING_END - HELD_OUT_END },
    ]);
    assert.deepEqual(await answered(() => handle.query(evaluationProgressQuery)), {
      total: 4,
      done: 4,
      failed: 0,
      inFlight: 0,
    });

    const report = await rig.store.getJson<EvaluationReport>(evaluationKey(input.evalId));
    const before = await rig.store.getJson<EvaluationReport>(evaluationKey(plain.evalId));
    // The report's own numbers are the training simulator's, exactly as without held-out simulators.
    const comparable = (r: EvaluationReport) => ({
      score: r.score,
      ci: r.ci,
      count: r.count,
      manifest: r.manifest,
      results: r.results.map((e) => ({ ...e, artifact: undefined })),
    });
    assert.deepEqual(comparable(report), comparable(before));
    assert.equal(before.simulators, undefined);

    const [training, alt] = report.simulators ?? [];
    assert.ok(training && alt && report.simulators?.length === 2);
    assert.deepEqual(
      [training.name, training.training, training.score, training.ci, training.gap, training.results],
      ['training', true, TRAINING_END, report.ci, 0, undefined],
    );
    assert.deepEqual(
      [alt.name, alt.training, alt.score, alt.ci, alt.gap, alt.count, alt.success, alt.failure],
      ['alt', false, HELD_OUT_END, { low: HELD_OUT_END, high: HELD_OUT_END }, TRAINING_END - HELD_OUT_END, 2, 0, 0],
    );
    // Each simulator's environment: the training one is the manifest's; the held-out one names its endpoint.
    assert.deepEqual(training.environment.simulator, report.manifest?.simulator);
    assert.deepEqual(alt.environment.simulator, {
      baseURL: heldOut.url,
      model: 'fake-model',
      served: { id: 'fake-model', root: null, ownedBy: 'attune-test' },
    });
    assert.deepEqual(alt.environment.protocol, training.environment.protocol);
    // Its dialogues are children of their own, named after it, seeded as the training simulator's.
    assert.deepEqual(
      (alt.results ?? []).map((e) => (e.status === 'ok' ? [e.scenarioId, e.finalEmotion, e.seed] : e.error)).sort(),
      report.results.map((e) => [e.scenarioId, HELD_OUT_END, e.seed]).sort(),
    );
    for (const scenario of SCENARIOS) {
      const described = await rig.env.client.workflow
        .getHandle(`${input.evalId}--${scenario}--simulator=alt`)
        .describe();
      assert.equal(described.status.name, 'COMPLETED');
    }
    const altDialogue = alt.results?.find((e) => e.status === 'ok');
    assert.ok(altDialogue?.status === 'ok');
    const transcript = await rig.store.getJson<Transcript>(altDialogue.artifact);
    assert.deepEqual(
      [transcript.simulatorModel, transcript.seed, ...transcript.turns.map((t) => t.emotionAfter)],
      ['fake-model', altDialogue.seed, 42, 44, 46],
    );

    // The text form: a row per simulator with its score, interval and gap.
    const table = renderEvaluationTable(completeEvaluationReport(report), { color: false });
    assert.match(table, /^SIMULATOR\s+MODEL\s+SCORE\s+95% CI\s+GAP\s+N\s+FAILED\s+SUCCESS\s+FAILURE$/m);
    assert.match(table, /^training \(training\)\s+fake-simulator\s+55\.00\s+55\.00-55\.00\s+-\s+2\s+0\s+0\s+0$/m);
    assert.match(table, /^alt\s+fake-model\s+46\.00\s+46\.00-46\.00\s+9\.00\s+2\s+0\s+0\s+0$/m);
  });

  it('attune eval --split eval --json --set evaluation.simulators=[...] gives a score and an environment per simulator', async () => {
    const address = (await sharedTestEnv()).address;
    const training = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 5 }) });
    heldOut = await FakeOpenAIServer.start({ analysis: () => ({ emotionChange: 2 }) });
    try {
      const set = testConfigSet(training.url, [
        `scenarios.eval=${FIXTURE_SCENARIOS}`,
        `evaluation.dialogue.maxTurns=${TURNS}`,
      ]);
      const result = await attune(
        [
          'eval',
          '--split',
          'eval',
          '--json',
          ...set.flatMap((s) => ['--set', s]),
          // The form the docs give.
          '--set',
          `evaluation.simulators=[{"name":"alt","baseURL":"http://127.0.0.1:${heldOut.port}/v1","model":"m"}]`,
        ],
        { TEMPORAL_ADDRESS: address },
      );
      assert.equal(result.code, 0, result.stderr);
      const report = JSON.parse(result.stdout) as EvaluationReport;
      assert.equal(report.score, TRAINING_END);
      assert.deepEqual(
        report.simulators?.map((s) => [s.name, s.score, s.ci, s.gap, s.count, s.environment.simulator.model]),
        [
          ['training', TRAINING_END, { low: TRAINING_END, high: TRAINING_END }, 0, 2, 'fake-simulator'],
          ['alt', HELD_OUT_END, { low: HELD_OUT_END, high: HELD_OUT_END }, TRAINING_END - HELD_OUT_END, 2, 'm'],
        ],
      );
      assert.equal(report.simulators?.[1]?.environment.simulator.baseURL, `http://127.0.0.1:${heldOut.port}/v1`);
      assert.equal(heldOut.count('analysis'), 2 * TURNS);
    } finally {
      await training.close();
    }
  });
});
