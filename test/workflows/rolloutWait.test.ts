import assert from 'node:assert/strict';
import { WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes.js';
import { continueSignal, WAIT_AT_OUTAGE_PATCH } from '../../src/workflows/outageWait.js';
import type { RecordedCall } from '../support/fakeOpenAI.js';
import { patchIds } from '../support/historyMarkers.js';
import { sharedWorkflowBundle } from '../support/temporalEnv.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { createRolloutRig, FIXTURE_SCENARIOS, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { buildEvaluationInput, startEvaluation } from '../../src/client/evaluations.js';
import { listWaitingRollouts } from '../../src/client/waitingRollouts.js';
import { evaluationProgressQuery } from '../../src/workflows/evaluation.js';
import { answered } from '../support/eventually.js';

const SCENARIO = 'test-venting-negative-baker';
const RETRIES = ['simulator.retry.maximumAttempts=2', 'policy.retry.maximumAttempts=2'];

/** The rollout's current details, as the UI shows them above the timeline. */
async function detailsOf(rig: RolloutRig, workflowId: string): Promise<string> {
  const metadata = await rig.client.workflow
    .getHandle(workflowId)
    .query<{ currentDetails?: string }>('__temporal_workflow_metadata');
  return metadata.currentDetails ?? '';
}

/** Polls until the rollout's details say it waits for an operator. */
async function waitingDetails(rig: RolloutRig, workflowId: string): Promise<string> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const details = await detailsOf(rig, workflowId);
    if (/waiting for an operator/.test(details)) return details;
    if (Date.now() > deadline) throw new Error(`the rollout never waited; details: ${details}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Successful answers per distinct request among `calls`. */
function answeredTwice(calls: readonly RecordedCall[]): string[] {
  const counts = new Map<string, number>();
  for (const c of calls) if (c.status === 200) counts.set(c.key, (counts.get(c.key) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([key]) => key);
}

describe('a rollout waits at a call whose endpoint stays down, and goes on from it (real dev server)', function () {
  this.timeout(180_000);
  let rig: RolloutRig | undefined;
  let down = false;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    down = false;
  });

  /** The simulator answers 500 to turn 3's analysis while `down`. */
  const behaviour = {
    fault: (ctx: { role: string; turn: number }) =>
      down && ctx.role === 'analysis' && ctx.turn === 3 ? '500' : undefined,
  } as const;

  it('simulator down past its retries in turn 3: waits there, then `continue` retries that call only and gives the undisturbed dialogue', async () => {
    rig = await createRolloutRig({ behaviour, set: [...ROLLOUT_MODES.perCall, ...RETRIES] });
    await rig.startWorkers();
    const scenario = fixtureScenario(SCENARIO);
    const undisturbed = await rig.runRollout(scenario, 11, { maxTurns: 4 });
    const before = rig.fake.calls.length;

    down = true;
    const handle = await rig.startRollout(scenario, 11, { maxTurns: 4 });
    const details = await waitingDetails(rig, handle.workflowId);
    assert.match(details, /at turn 3 · analysis of the reply/);
    assert.match(
      details,
      new RegExp(`\\*\\*endpoint\\*\\* ${rig.fake.url.replace(/[./]/g, '\\$&')} \\(model "fake-simulator"\\)`),
    );
    assert.match(details, /\*\*last error\*\* .*HTTP 500/);
    const described = await handle.describe();
    assert.equal(described.status.name, 'RUNNING');
    assert.equal(described.typedSearchAttributes.get(SEARCH_ATTRIBUTES.outcome), 'waiting');
    const refused = rig.fake.calls.slice(before).filter((c) => c.status === 500).length;
    assert.equal(refused, 2, 'the analysis was tried as often as its retries allow, then waited');

    down = false;
    await handle.signal(continueSignal);
    const resumed = await handle.result();
    assert.equal(resumed.rolloutId, handle.workflowId, 'the same rollout went on');
    assert.deepEqual(resumed.emotions, undisturbed.emotions);
    assert.equal(resumed.reward, undisturbed.reward);
    assert.equal(resumed.turns, undisturbed.turns);
    assert.deepEqual(answeredTwice(rig.fake.calls.slice(before)), [], 'no finished call was made again');
    const history = await handle.fetchHistory();
    assert.ok(patchIds(history.events ?? []).includes(WAIT_AT_OUTAGE_PATCH));
    // The wait and the signal replay with the same code (the determinism guard of recorded histories).
    await Worker.runReplayHistory({ workflowBundle: await sharedWorkflowBundle() }, history, handle.workflowId);
    const after = await handle.describe();
    assert.equal(after.typedSearchAttributes.get(SEARCH_ATTRIBUTES.outcome), resumed.outcome);
  });

  it('whether a rollout waits is asked when it starts: a rollout that never fails records the patch before its first call', async () => {
    rig = await createRolloutRig({ behaviour, set: [...ROLLOUT_MODES.perCall, ...RETRIES] });
    await rig.startWorkers();
    const handle = await rig.startRollout(fixtureScenario(SCENARIO), 17, { maxTurns: 2 });
    await handle.result();
    const events = (await handle.fetchHistory()).events ?? [];
    assert.ok(!events.some((e) => e.activityTaskFailedEventAttributes), 'no call failed');
    const marker = events.findIndex((e) => patchIds([e]).includes(WAIT_AT_OUTAGE_PATCH));
    const firstCall = events.findIndex((e) => e.activityTaskScheduledEventAttributes);
    assert.ok(marker >= 0, `no ${WAIT_AT_OUTAGE_PATCH} marker among ${patchIds(events).join(', ')}`);
    assert.ok(marker < firstCall, 'the marker comes before the first call, in the first workflow task');
  });

  for (const mode of ['turnActivity', 'localTurn'] as const) {
    it(`${ROLLOUT_MODES[mode].join(' ')}: the turn waits at the call that failed, and going on does not make its finished policy call again`, async () => {
      rig = await createRolloutRig({ behaviour, set: [...RETRIES, ...ROLLOUT_MODES[mode]] });
      await rig.startWorkers();
      const scenario = fixtureScenario(SCENARIO);
      const undisturbed = await rig.runRollout(scenario, 13, { maxTurns: 4 });
      const before = rig.fake.calls.length;
      down = true;
      const handle = await rig.startRollout(scenario, 13, { maxTurns: 4 });
      const details = await waitingDetails(rig, handle.workflowId);
      // The turn's failure names its failed call, so the wait names that call and its endpoint alone.
      assert.match(details, /at turn 3 · analysis of the reply/);
      assert.match(
        details,
        new RegExp(`\\*\\*endpoint\\*\\* ${rig.fake.url.replace(/[./]/g, '\\$&')} \\(model "fake-simulator"\\)\n`),
      );
      down = false;
      await handle.signal(continueSignal);
      const resumed = await handle.result();
      assert.deepEqual(resumed.emotions, undisturbed.emotions);
      const calls = rig.fake.calls.slice(before);
      assert.deepEqual(answeredTwice(calls), [], 'no finished call was made again');
      assert.equal(calls.filter((c) => c.role === 'policy' && c.status === 200).length, 4, 'one policy reply per turn');
    });
  }

  it('a wait past rollout.maxWaitMinutes fails the dialogue as before', async () => {
    rig = await createRolloutRig({ behaviour, set: [...RETRIES, 'rollout.maxWaitMinutes=0.01'] });
    await rig.startWorkers();
    down = true;
    const handle = await rig.startRollout(fixtureScenario(SCENARIO), 5, { maxTurns: 4 });
    const error = await handle.result().then(
      () => null,
      (e: unknown) => e,
    );
    assert.ok(error instanceof WorkflowFailedError, String(error));
    let cause: unknown = error.cause;
    const messages: string[] = [];
    while (cause instanceof Error) {
      messages.push(cause.message);
      cause = (cause as Error & { cause?: unknown }).cause;
    }
    assert.match(messages.join(' <- '), /simulator endpoint .*HTTP 500/);
    const events = (await handle.fetchHistory()).events ?? [];
    assert.ok(
      events.some((e) => e.timerStartedEventAttributes),
      'it waited (a timer for the bound) before it failed',
    );
  });

  it('an evaluation: its dialogues wait too, counted in its progress, and go on to the undisturbed score', async () => {
    rig = await createRolloutRig({ behaviour, set: RETRIES });
    await rig.startWorkers();
    const plain = buildEvaluationInput(rig.config, {
      scenarios: FIXTURE_SCENARIOS,
      evalId: `eval-plain-${Date.now()}`,
    });
    const undisturbed = await (await startEvaluation(rig.env.client, rig.config, plain)).result();
    assert.equal(undisturbed.failed, 0);

    down = true;
    const input = buildEvaluationInput(rig.config, { scenarios: FIXTURE_SCENARIOS, evalId: `eval-wait-${Date.now()}` });
    const handle = await startEvaluation(rig.env.client, rig.config, input);
    const deadline = Date.now() + 60_000;
    while ((await answered(() => handle.query(evaluationProgressQuery))).waiting !== undisturbed.count) {
      if (Date.now() > deadline) throw new Error('the evaluation never counted its dialogues waiting');
      await new Promise((r) => setTimeout(r, 100));
    }
    let waiting = await listWaitingRollouts(rig.client, input.evalId);
    while (waiting.length < undisturbed.count) {
      if (Date.now() > deadline) throw new Error(`visibility lists ${waiting.length} waiting dialogues`);
      await new Promise((r) => setTimeout(r, 200));
      waiting = await listWaitingRollouts(rig.client, input.evalId);
    }
    down = false;
    for (const w of waiting) await rig.client.workflow.getHandle(w.rolloutId).signal(continueSignal);
    const summary = await handle.result();
    assert.equal(summary.failed, 0);
    assert.equal(summary.count, undisturbed.count);
    assert.equal(summary.score, undisturbed.score);
    assert.equal((await answered(() => handle.query(evaluationProgressQuery))).waiting, 0);
  });
});
