import { isTurnRecordKey } from '../../src/journal/turnJournalKeys.js';
import assert from 'node:assert/strict';
import { evaluationKey } from '../../src/artifacts/keys.js';
import type { EvaluationReport } from '../../src/core/evaluationReport.js';
import type { Transcript } from '../../src/core/transcript.js';
import { followEvaluation } from '../../src/client/evaluationProgress.js';
import { steadyLink } from '../../src/client/frontendLink.js';
import { buildEvaluationInput, startEvaluation } from '../../src/client/evaluations.js';
import { evaluationProgressQuery, type EvaluationProgress } from '../../src/workflows/evaluation.js';
import { createRolloutRig, FIXTURE_SCENARIOS, type RolloutRig } from '../support/rolloutRig.js';
import { localActivityTypes } from '../support/historyMarkers.js';
import { answered, eventually } from '../support/eventually.js';

describe('evaluation workflow', function () {
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('runs the SAGE protocol over a scenario set; a failed dialogue is reported and excluded', async () => {
    rig = await createRolloutRig({
      behaviour: {
        analysis: () => ({ emotionChange: 5 }),
        // Only Idris's profile lacks a first message: his opening call is rejected, so his dialogue fails.
        fault: (ctx) => (ctx.role === 'opening' ? '401' : undefined),
      },
    });
    await rig.startWorkers();
    const input = buildEvaluationInput(rig.config, { scenarios: FIXTURE_SCENARIOS, evalId: `eval-test-${Date.now()}` });
    // SAGE protocol defaults.
    assert.equal(input.settings.initialEmotion, 40);
    assert.equal(input.settings.maxTurns, 10);
    assert.equal(input.settings.simulator.temperature, 0);
    const handle = await startEvaluation(rig.env.client, rig.config, input);
    const summary = await handle.result();
    assert.equal(summary.count, 1);
    assert.equal(summary.failed, 1);
    // Marta: 40 + 5 per turn for 10 turns.
    assert.equal(summary.score, 90);
    const report = await rig.store.getJson<EvaluationReport>(evaluationKey(input.evalId));
    const failed = report.results.find((r) => r.status === 'failed');
    assert.equal(failed?.scenarioId, 'test-not-my-fault-avoidant-cyclist');
    assert.match(failed?.status === 'failed' ? failed.error : '', /simulator endpoint .*HTTP 401/);
    const done = report.results.find((r) => r.status === 'ok');
    assert.ok(done?.status === 'ok');
    assert.deepEqual(done.emotions, [40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90]);
    // Each scenario's transcript is kept.
    const transcript = await rig.store.getJson<Transcript>(done.artifact);
    assert.equal(transcript.turns.length, 10);
    assert.equal(transcript.runName, input.evalId);
  });

  it("starts its dialogues with the settings' workflow-task timeout (20 s with local calls), one local activity per turn", async () => {
    rig = await createRolloutRig({
      behaviour: { analysis: () => ({ emotionChange: 5 }) },
      set: ['rollout.llmCalls=local', 'rollout.activityPer=turn'],
    });
    await rig.startWorkers();
    const scenario = 'test-venting-negative-baker';
    const input = buildEvaluationInput(rig.config, {
      scenarios: FIXTURE_SCENARIOS,
      evalId: `eval-local-${Date.now()}`,
      only: [scenario],
    });
    assert.equal(input.settings.workflowTaskTimeoutMs, 20_000);
    const summary = await (await startEvaluation(rig.env.client, rig.config, input)).result();
    assert.equal(summary.score, 90);
    const child = await rig.env.client.workflow.getHandle(`${input.evalId}--${scenario}`).fetchHistory();
    const started = child.events?.[0]?.workflowExecutionStartedEventAttributes;
    assert.equal(Number(started?.workflowTaskTimeout?.seconds), 20);
    assert.deepEqual(
      localActivityTypes(child.events ?? []),
      ['loadScenario', ...Array<string>(10).fill('playDialogueTurn'), 'saveTranscript'],
      'one local activity per turn, and the artifact activities',
    );
    const queued = (child.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? [],
    );
    assert.deepEqual(queued, [], 'no queued activity: the turn journal is left to the sweeper');
    await eventually('the turn journals removed after the dialogues closed', async () =>
      (await rig!.store.list('journals/')).filter(isTurnRecordKey).length === 0 ? true : undefined,
    );
  });

  it('answers a progress query while it asks the simulator endpoint what it serves, before any dialogue', async () => {
    rig = await createRolloutRig({ behaviour: { analysis: () => ({ emotionChange: 5 }) } });
    rig.fake.holdModelList = true;
    await rig.startWorkers();
    const input = buildEvaluationInput(rig.config, {
      scenarios: FIXTURE_SCENARIOS,
      evalId: `eval-early-${Date.now()}`,
    });
    const handle = await startEvaluation(rig.env.client, rig.config, input);
    await rig.fake.modelListAsked;
    // `attune eval` follows an evaluation from its start: the query must be answered from the first workflow task.
    assert.deepEqual(await answered(() => handle.query(evaluationProgressQuery)), {
      total: 2,
      done: 0,
      failed: 0,
      inFlight: 0,
    });
    rig.fake.holdModelList = false;
    rig.fake.release();
    assert.equal((await handle.result()).count, 2);
  });

  it('answers a progress query while it runs and after it ends: total, done, failed, in flight', async () => {
    rig = await createRolloutRig({
      behaviour: {
        analysis: () => ({ emotionChange: 5 }),
        // Idris's opening is rejected (his dialogue fails); Marta's first policy call waits for the test.
        fault: (ctx) => (ctx.role === 'opening' ? '401' : ctx.role === 'policy' && ctx.nth === 1 ? 'hold' : undefined),
      },
      // The held call must not time out and be retried while the test looks.
      set: ['policy.timeoutMs=120000'],
    });
    await rig.startWorkers();
    const input = buildEvaluationInput(rig.config, {
      scenarios: FIXTURE_SCENARIOS,
      evalId: `eval-progress-${Date.now()}`,
    });
    const handle = await startEvaluation(rig.env.client, rig.config, input);
    const followed = followEvaluation(steadyLink(rig.env.client), input.evalId, 50);
    const seen: EvaluationProgress[] = [];
    const watching = (async () => {
      for await (const p of followed.statuses) seen.push(p);
    })();
    await rig.fake.waitForCall('policy', 1);
    // Marta's call is held: the follower sees Idris's failure and her dialogue in flight, and stays there.
    while (!seen.some((p) => p.failed === 1)) await new Promise((resolve) => setTimeout(resolve, 20));
    const midway = { total: 2, done: 0, failed: 1, inFlight: 1 };
    assert.deepEqual(
      seen.find((p) => p.failed === 1),
      midway,
    );
    assert.deepEqual(await answered(() => handle.query(evaluationProgressQuery)), midway);
    rig.fake.release();
    const summary = await followed.result;
    await watching;
    assert.equal(summary.count, 1);
    assert.equal(summary.failed, 1);
    // An ended evaluation still answers (its history is replayed): every dialogue accounted for.
    assert.deepEqual(await answered(() => handle.query(evaluationProgressQuery)), {
      total: 2,
      done: 1,
      failed: 1,
      inFlight: 0,
    });
    for (const p of seen) assert.ok(p.done + p.failed + p.inFlight <= p.total && p.total === 2, JSON.stringify(p));
  });
});
