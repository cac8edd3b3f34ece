import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { evaluationKey } from '../../src/artifacts/keys.js';
import { createEvaluationSchedule } from '../../src/cli/commands/schedule.js';
import type { EvaluationReport } from '../../src/core/evaluationReport.js';
import type { ScheduledEvaluationInput, scheduledEvaluation } from '../../src/workflows/scheduledEvaluation.js';
import { loadCapabilityReport } from '../../src/client/capabilityEvaluations.js';
import { CAPABILITY_DATASETS } from '../../src/scenarios/capabilityDatasets.js';
import { fakeTrainerRuns } from '../support/fakeTrainerRuns.js';
import { createRolloutRig, FIXTURE_SCENARIOS, type RolloutRig } from '../support/rolloutRig.js';

/** Triggers the schedule `name` and waits for the evaluation it started. */
async function triggeredSummary(rig: RolloutRig, name: string) {
  const handle = rig.env.client.schedule.getHandle(name);
  await handle.trigger();
  // Once the triggered evaluation's first dialogue calls the policy, the schedule lists the action it started.
  await rig.fake.waitForCall('policy', 1);
  const info = (await handle.describe()).info;
  const workflowId = info.runningActions[0]?.workflow.workflowId ?? info.recentActions[0]?.action.workflow.workflowId;
  assert.ok(workflowId, 'the trigger started a workflow');
  return rig.env.client.workflow.getHandle<typeof scheduledEvaluation>(workflowId).result();
}

describe('nightly evaluation schedules (real dev server)', function () {
  let rig: RolloutRig | undefined;
  let trainer: { url: string; server: Server } | undefined;
  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    trainer?.server.close();
    trainer = undefined;
  });

  it("creates, triggers (evaluating the run's latest version), pauses and deletes a schedule", async () => {
    trainer = await fakeTrainerRuns(3);
    rig = await createRolloutRig({ set: [`trainer.url=${trainer.url}`, 'evaluation.dialogue.maxTurns=2'] });
    // Versions are sampled from the fake OpenAI server, as they would be from vLLM with LoRA adapters.
    const config = { ...rig.config, trainer: { ...rig.config.trainer, policyBaseURL: rig.fake.url } };
    await rig.startWorkers();
    const name = `nightly-${Date.now()}`;
    await createEvaluationSchedule(rig.env.client, config, {
      name,
      cron: '0 2 * * *',
      scenarios: FIXTURE_SCENARIOS,
      run: 'run-a',
      catchupWindow: '2 hours',
    });
    const handle = rig.env.client.schedule.getHandle(name);
    const described = await handle.describe();
    assert.equal(described.policies.overlap, ScheduleOverlapPolicy.SKIP);
    assert.equal(described.policies.catchupWindow, 2 * 3600 * 1000);
    assert.equal(described.state.paused, false);
    assert.ok(described.info.nextActionTimes.length > 0);

    const summary = await triggeredSummary(rig, name);
    assert.equal(summary.policyModel, 'run-a@3');
    assert.equal(summary.count, 2);
    const report = await rig.store.getJson<EvaluationReport>(evaluationKey(summary.evalId));
    assert.equal(report.runName, 'run-a');
    assert.equal(report.step, 3);

    await handle.pause('maintenance');
    assert.equal((await handle.describe()).state.paused, true);
    await handle.unpause();
    assert.equal((await handle.describe()).state.paused, false);
    await handle.delete();
    await assert.rejects(handle.describe(), ScheduleNotFoundError);
  });
  it('--suites: the action carries the capability suites, and each firing scores them on the version it evaluated', async () => {
    trainer = await fakeTrainerRuns(2);
    rig = await createRolloutRig({ set: [`trainer.url=${trainer.url}`, 'evaluation.dialogue.maxTurns=2'] });
    const config = { ...rig.config, trainer: { ...rig.config.trainer, policyBaseURL: rig.fake.url } };
    await rig.startWorkers();
    const name = `nightly-suites-${Date.now()}`;
    await createEvaluationSchedule(rig.env.client, config, {
      name,
      cron: '0 3 * * *',
      scenarios: FIXTURE_SCENARIOS,
      run: 'run-b',
      suites: ['math'],
    });
    const handle = rig.env.client.schedule.getHandle(name);
    const described = await handle.describe();
    assert.equal(described.action.type, 'startWorkflow');
    const [input] = described.action.args as [ScheduledEvaluationInput];
    assert.deepEqual(
      input.suites?.map((s) => [s.suite, s.dataset.file, s.problemIds.length]),
      [['math', CAPABILITY_DATASETS.math.file, 50]],
    );
    assert.match(described.state.note ?? '', /Sentient evaluation and math of run run-b/);

    const summary = await triggeredSummary(rig, name);
    assert.equal(summary.policyModel, 'run-b@2');
    const [math] = summary.suites ?? [];
    assert.equal(math?.suite, 'math');
    assert.equal(math.count + math.failed, 50);
    const report = await loadCapabilityReport(rig.store, math.evalId);
    assert.equal(report.environment.policy.model, 'run-b@2', 'the suite scored the version the Sentient score did');
    assert.deepEqual([report.runName, report.step], ['run-b', 2]);
    await handle.delete();
  });
});
