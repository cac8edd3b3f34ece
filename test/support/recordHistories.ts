/**
 * Records the workflow histories that the replay tests replay. Run it when a workflow change is
 * meant to be incompatible (and version the workflow), never to make a failing replay pass:
 *   node --import tsx test/support/recordHistories.ts
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { historyToJSON } from '@temporalio/common/lib/proto-utils';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { createRolloutRig, fixtureScenario } from './rolloutRig.js';
import { teardownSharedTestEnv } from './temporalEnv.js';
import { createTrainingRig, TINY_TRAINING } from './trainingRig.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';

export const HISTORIES_DIR = join(__dirname, '..', 'fixtures', 'histories');

async function recordRollout(): Promise<void> {
  const rig = await createRolloutRig({ behaviour: { analysis: (ctx) => ({ emotionChange: ctx.turn % 2 === 0 ? -3 : 6 }) } });
  await rig.startWorkers();
  // Think mode and a simulator-written opening: the history covers every activity type.
  const handle = await rig.startRollout(fixtureScenario('test-not-my-fault-avoidant-cyclist'), 4242, { maxTurns: 3, think: true }, 'replay-fixture-rollout');
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(join(HISTORIES_DIR, 'rollout.json'), historyToJSON(history));
  await rig.close();
}

/** The first execution of a 2-step training run (it continues as new after step 1). */
async function recordTraining(): Promise<void> {
  const rig = await createTrainingRig({ set: TINY_TRAINING('grpo', 2) });
  await rig.startWorkers();
  const { handle } = await rig.start('replay-fixture');
  await handle.result();
  const firstRunId = 'firstExecutionRunId' in handle ? String(handle.firstExecutionRunId) : undefined;
  const first = rig.client.workflow.getHandle(trainingWorkflowId('replay-fixture'), firstRunId);
  writeFileSync(join(HISTORIES_DIR, 'training-step.json'), historyToJSON(await first.fetchHistory()));
  await rig.close();
}

if (require.main === module) {
  installTemporalLogging('ERROR');
  recordRollout()
    .then(() => recordTraining())
    .then(() => teardownSharedTestEnv())
    .then(() => console.log(`recorded histories in ${HISTORIES_DIR}`))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
