import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { ScheduleNotFoundError, ScheduleOverlapPolicy } from '@temporalio/client';
import { evaluationKey } from '../../src/artifacts/keys.js';
import { createEvaluationSchedule } from '../../src/cli/commands/schedule.js';
import type { EvaluationReport } from '../../src/core/evaluationReport.js';
import type { scheduledEvaluation } from '../../src/workflows/scheduledEvaluation.js';
import { fakeTrainerRuns } from '../support/fakeTrainerRuns.js';
import { createRolloutRig, FIXTURE_SCENARIOS, type RolloutRig } from '../support/rolloutRig.js';

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

    await handle.trigger();
    // Once the triggered evaluation's first dialogue calls the policy, the schedule lists the action it started.
    await rig.fake.waitForCall('policy', 1);
    const info = (await handle.describe()).info;
    const workflowId = info.runningActions[0]?.workflow.workflowId ?? info.recentActions[0]?.action.workflow.workflowId;
    assert.ok(workflowId, 'the trigger started a workflow');
    const summary = await rig.env.client.workflow.getHandle<typeof scheduledEvaluation>(workflowId).result();
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
});
