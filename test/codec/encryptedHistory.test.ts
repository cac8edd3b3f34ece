import assert from 'node:assert/strict';
import { Connection } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { createEvaluationSchedule } from '../../src/cli/commands/schedule.js';
import { describeError } from '../../src/cli/main.js';
import { buildEvaluationInput, startEvaluation } from '../../src/client/evaluations.js';
import { temporalClient } from '../../src/temporal/connect.js';
import type { scheduledEvaluation } from '../../src/workflows/scheduledEvaluation.js';
import { createRolloutRig, FIXTURE_SCENARIOS, fixtureScenario, type RolloutRig } from '../support/rolloutRig.js';
import { sharedTestEnv, sharedWorkflowBundle } from '../support/temporalEnv.js';
import { ROLLOUT_MODES } from '../support/rolloutModes.js';
import { converterWith } from './keyFiles.js';
import { dialogueMarkers, historyWithoutCodec, plaintextFound } from './plainHistory.js';

const baker = fixtureScenario('test-venting-negative-baker');
const markers = dialogueMarkers(baker);
/** What every mode's plain history shows: the dialogue itself. */
const DIALOGUE = ['hidden intention', "the user's first message", "the policy's reply", "the simulated user's reply"];
/** An explicit data converter with no codec: plain payloads even when the suite runs with ATTUNE_CODEC_KEYS_FILE. */
const PLAIN = {};

/** The payloads of a workflow's first event as stored, and their key ids. */
async function storedInputKeyIds(rig: RolloutRig, workflowId: string): Promise<string[]> {
  const history = await rig.client.workflow.getHandle(workflowId).fetchHistory();
  const payloads = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
  return payloads.map((p) => Buffer.from(p.metadata?.['encryption-key-id'] ?? []).toString('utf8'));
}

describe('encrypted payloads (real dev server)', function () {
  this.timeout(240_000);
  let rig: RolloutRig | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  // Each mode's histories hold different payloads (a turn activity's input carries no simulator
  // prompt), so each mode's encrypted check is held against what that mode's plain history shows.
  for (const [mode, set] of Object.entries(ROLLOUT_MODES)) {
    it(`without the codec, the history shows the dialogue in plain text (${mode}; the check below can fail)`, async () => {
      rig = await createRolloutRig({ dataConverter: PLAIN, set: [...set] });
      await rig.startWorkers();
      const id = `codec-plain-${mode}-${Date.now()}`;
      await rig.runRollout(baker, 1, { maxTurns: 2 }, id);
      const found = plaintextFound(await historyWithoutCodec(rig.env.address, id), markers);
      if (mode === 'perCall') assert.deepEqual(found, Object.keys(markers));
      for (const what of DIALOGUE)
        assert.ok(found.includes(what), `${what} in the plain history of ${mode}: ${found.join(', ')}`);
    });

    it(`with the codec, a rollout's history holds no hidden intention, prompt or reply (${mode})`, async () => {
      rig = await createRolloutRig({ dataConverter: converterWith(['k1']), set: [...set] });
      await rig.startWorkers();
      const id = `codec-rollout-${mode}-${Date.now()}`;
      const summary = await rig.runRollout(baker, 1, { maxTurns: 2 }, id);
      assert.equal(summary.turns, 2);
      assert.equal(summary.scenarioId, baker.id);
      const raw = await historyWithoutCodec(rig.env.address, id);
      assert.deepEqual(plaintextFound(raw, markers), []);
      assert.match(raw, /binary\/encrypted|YmluYXJ5L2VuY3J5cHRlZA/, 'the payloads are marked encrypted');
    });
  }

  it('an activity failure quoting a reply is encrypted too (message and stack trace)', async () => {
    rig = await createRolloutRig({
      dataConverter: converterWith(['k1']),
      behaviour: { fault: (ctx) => (ctx.role === 'analysis' ? 'malformed' : undefined) },
      set: ['simulator.parseRetries=0'],
    });
    await rig.startWorkers();
    const id = `codec-failure-${Date.now()}`;
    await assert.rejects(rig.runRollout(baker, 1, { maxTurns: 2 }, id), /Workflow execution failed/);
    const raw = await historyWithoutCodec(rig.env.address, id);
    assert.match(raw, /Encoded failure/);
    assert.doesNotMatch(raw, /no parseable analysis|Sorry, I cannot do that/);
    assert.deepEqual(plaintextFound(raw, markers), []);
    // The codec's client still reads the real message.
    const history = await rig.client.workflow.getHandle(id).fetchHistory();
    assert.ok(history.events?.length);
    await assert.rejects(rig.client.workflow.getHandle(id).result(), (error: unknown) => {
      assert.match(describeError(error), /no parseable analysis/);
      return true;
    });
  });

  it('a history written with the codec replays with it', async () => {
    const converter = converterWith(['k1']);
    rig = await createRolloutRig({ dataConverter: converter });
    await rig.startWorkers();
    const id = `codec-replay-${Date.now()}`;
    await rig.runRollout(baker, 2, { maxTurns: 2 }, id);
    const history = await rig.client.workflow.getHandle(id).fetchHistory();
    await Worker.runReplayHistory(
      { workflowBundle: await sharedWorkflowBundle(converter), dataConverter: converter },
      history,
      id,
    );
  });

  it('rotation: a rollout written under k1 reads after k2 is added, new ones use k2; without k1 the error names it', async () => {
    rig = await createRolloutRig({ dataConverter: converterWith(['k1']) });
    await rig.startWorkers();
    const before = `codec-rotation-k1-${Date.now()}`;
    const written = await rig.runRollout(baker, 3, { maxTurns: 2 }, before);
    await rig.close();

    rig = await createRolloutRig({ dataConverter: converterWith(['k1', 'k2']) });
    await rig.startWorkers();
    assert.deepEqual(await rig.client.workflow.getHandle(before).result(), written);
    const after = `codec-rotation-k2-${Date.now()}`;
    await rig.runRollout(baker, 3, { maxTurns: 2 }, after);
    assert.deepEqual(await storedInputKeyIds(rig, before), ['k1']);
    assert.deepEqual(await storedInputKeyIds(rig, after), ['k2']);

    const env = await sharedTestEnv();
    const k2Only = temporalClient(env.connection, 'default', converterWith(['k2']));
    await assert.rejects(k2Only.workflow.getHandle(before).result(), /key id "k1", which is not in .*keys-k2\.json/);
  });

  it('an evaluation runs with the codec, and its dialogues are encrypted', async () => {
    rig = await createRolloutRig({
      dataConverter: converterWith(['k1']),
      behaviour: { analysis: () => ({ emotionChange: 5 }) },
      set: ['evaluation.dialogue.maxTurns=2'],
    });
    await rig.startWorkers();
    const input = buildEvaluationInput(rig.config, {
      scenarios: FIXTURE_SCENARIOS,
      evalId: `codec-eval-${Date.now()}`,
    });
    const summary = await (await startEvaluation(rig.client, rig.config, input)).result();
    assert.equal(summary.count, 2);
    assert.equal(summary.failed, 0);
    const raw = await historyWithoutCodec(rig.env.address, `${input.evalId}--${baker.id}`);
    assert.deepEqual(plaintextFound(raw, markers), []);
  });

  it('a schedule created with the codec fires an evaluation that runs with it', async () => {
    rig = await createRolloutRig({
      dataConverter: converterWith(['k1']),
      behaviour: { analysis: () => ({ emotionChange: 5 }) },
      set: ['evaluation.dialogue.maxTurns=2'],
    });
    await rig.startWorkers();
    const name = `codec-nightly-${Date.now()}`;
    // A fixed policy model: the schedule's version lookup is tested elsewhere; here only the payloads matter.
    await createEvaluationSchedule(rig.client, rig.config, { name, cron: '0 2 * * *', scenarios: FIXTURE_SCENARIOS });
    const handle = rig.client.schedule.getHandle(name);
    try {
      await handle.trigger();
      let workflowId: string | undefined;
      for (let i = 0; i < 100 && !workflowId; i++) {
        const info = (await handle.describe()).info;
        workflowId = info.runningActions[0]?.workflow.workflowId ?? info.recentActions[0]?.action.workflow.workflowId;
        if (!workflowId) await new Promise((r) => setTimeout(r, 200));
      }
      assert.ok(workflowId, 'the trigger started a workflow');
      const summary = await rig.client.workflow.getHandle<typeof scheduledEvaluation>(workflowId).result();
      assert.equal(summary.count, 2);
      const raw = await historyWithoutCodec(rig.env.address, `${summary.evalId}--${baker.id}`);
      assert.deepEqual(plaintextFound(raw, markers), []);
      // The schedule's stored action arguments are encrypted as well.
      const connection = await Connection.connect({ address: rig.env.address });
      try {
        const described = await connection.workflowService.describeSchedule({ namespace: 'default', scheduleId: name });
        const args = described.schedule?.action?.startWorkflow?.input?.payloads ?? [];
        assert.ok(args.length > 0);
        for (const p of args) assert.equal(Buffer.from(p.metadata?.encoding ?? []).toString(), 'binary/encrypted');
      } finally {
        await connection.close();
      }
    } finally {
      await handle.delete();
    }
  });
});
