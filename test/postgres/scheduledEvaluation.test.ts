import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import { listEvaluations } from '../../src/client/runListing.js';
import { createEvaluationSchedule } from '../../src/cli/commands/schedule.js';
import type { scheduledEvaluation } from '../../src/workflows/scheduledEvaluation.js';
import { eventually } from '../support/eventually.js';
import { fakeTrainerRuns } from '../support/fakeTrainerRuns.js';
import { createRolloutRig, FIXTURE_SCENARIOS, type RolloutRig } from '../support/rolloutRig.js';

describe('nightly evaluation schedule on the Temporal cluster on PostgreSQL', function () {
  this.timeout(300_000);
  let rig: RolloutRig | undefined;
  let trainer: Server | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
    trainer?.close();
    trainer = undefined;
  });

  it('a triggered schedule runs an evaluation, which SQL visibility lists under its run', async () => {
    const fake = await fakeTrainerRuns(2);
    trainer = fake.server;
    const trainerUrl = fake.url;
    rig = await createRolloutRig({ set: [`trainer.url=${trainerUrl}`, 'evaluation.dialogue.maxTurns=2'] });
    const config = { ...rig.config, trainer: { ...rig.config.trainer, policyBaseURL: rig.fake.url } };
    await rig.startWorkers();
    const name = `pg-nightly-${Date.now()}`;
    const run = `pg-run-${Date.now()}`;
    await createEvaluationSchedule(rig.client, config, {
      name,
      cron: '0 2 * * *',
      scenarios: FIXTURE_SCENARIOS,
      run,
      catchupWindow: '2 hours',
    });
    const handle = rig.client.schedule.getHandle(name);
    await handle.trigger();
    const workflowId = await eventually('the workflow the trigger started', async () => {
      const info = (await handle.describe()).info;
      return info.runningActions[0]?.workflow.workflowId ?? info.recentActions[0]?.action.workflow.workflowId;
    });
    const summary = await rig.client.workflow.getHandle<typeof scheduledEvaluation>(workflowId).result();
    assert.equal(summary.policyModel, `${run}@2`);
    const row = await eventually(`evaluation of ${run} in listEvaluations`, async () =>
      (await listEvaluations(rig!.client, run)).find((r) => r.status === 'COMPLETED'),
    );
    assert.equal(row.id, summary.evalId);
    assert.equal(row.run, run);
    assert.equal(row.step, 2, 'AttuneStep (Int) read back from SQL visibility');
    assert.ok(row.score !== null, 'AttuneMeanReward (Double) read back from SQL visibility');
    await handle.delete();
  });
});
