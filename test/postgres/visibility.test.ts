import assert from 'node:assert/strict';
import { listRuns } from '../../src/client/runListing.js';
import { SEARCH_ATTRIBUTES } from '../../src/temporal/searchAttributes.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { eventually } from '../support/eventually.js';
import { createTrainingRig, TINY_TRAINING, type TrainingRig } from '../support/trainingRig.js';

describe("Attune's search attributes through SQL visibility (Temporal cluster on PostgreSQL)", function () {
  this.timeout(300_000);
  let rig: TrainingRig | undefined;

  afterEach(async () => {
    await rig?.close();
    rig = undefined;
  });

  it('finds a training run by AttuneRunName, and `runs` lists it', async () => {
    rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 1) });
    await rig.startWorkers();
    const run = `pg-visibility-${Date.now()}`;
    const { handle } = await rig.start(run);
    assert.equal((await handle.result()).stepsApplied, 1);
    const client = rig.client;
    const query = `${SEARCH_ATTRIBUTES.runName.name} = '${run}' AND ${SEARCH_ATTRIBUTES.kind.name} = 'training'`;
    const found = await eventually(`training run ${run} by ${query}`, async () => {
      for await (const info of client.workflow.list({ query })) if (info.status.name === 'COMPLETED') return info;
      return undefined;
    });
    assert.equal(found.workflowId, trainingWorkflowId(run));
    assert.equal(found.typedSearchAttributes.get(SEARCH_ATTRIBUTES.runName), run);
    const row = await eventually(`run ${run} in listRuns`, async () =>
      (await listRuns(client)).find((r) => r.name === run),
    );
    assert.equal(row.step, 1, 'AttuneStep (Int) read back from SQL visibility');
  });
});
