/**
 * Records the workflow histories that the replay tests replay. Run it when a workflow change is
 * meant to be incompatible (and version the workflow), never to make a failing replay pass:
 *   node --import tsx test/support/recordHistories.ts [NAME...]   (default: all; names below)
 *
 * Two histories were recorded by older workflow code, in a scratch copy of the commit before the
 * change, with the rollout rig of that commit (scenario test-not-my-fault-avoidant-cyclist, seed
 * 4242, 4 turns, simulator and policy retries at 2 attempts), and cannot be recorded again here:
 * - rollout-failed-before-wait-at-outage.json: the code before rollouts waited at an outage; the
 *   simulator's analysis answers 500 from its 3rd call on, and the rollout fails;
 * - rollout-waited-at-outage-asked-late.json: the code that asked the wait-at-outage patch only
 *   when a call failed; turn 3's analysis answers 500 until the rollout waits, then `continue`.
 * Three more were recorded here by older code and are kept for what they hold: rollout-local-turn.json
 * (local turns before their journal), rollout-local-turn-before-local-artifacts.json and
 * rollout-local-turn-journal.json (the rollout removed its journal in a queued activity).
 * training-first-finished-before-publish-overlap.json is the first run of a 2-step first-finished GRPO
 * run (TINY_TRAINING, full weights published to the fake vLLM, maxStaleness 1, maxInFlight 8) recorded by
 * the code before PUBLISH_WHILE_OPTIMIZING_PATCH, where the step's publish still ran in its own run.
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

/** `set`: config overrides, e.g. another `rollout.activityPer`. */
async function recordRollout(file: string, set: string[] = []): Promise<void> {
  const rig = await createRolloutRig({
    behaviour: { analysis: (ctx) => ({ emotionChange: ctx.turn % 2 === 0 ? -3 : 6 }) },
    set,
  });
  await rig.startWorkers();
  // Think mode and a simulator-written opening: the history covers every activity type.
  const handle = await rig.startRollout(
    fixtureScenario('test-not-my-fault-avoidant-cyclist'),
    4242,
    { maxTurns: 3, think: true },
    `replay-fixture-${file.replace(/\.json$/, '')}`,
  );
  await handle.result();
  const history = await handle.fetchHistory();
  writeFileSync(join(HISTORIES_DIR, file), historyToJSON(history));
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

const RECORDERS: Record<string, () => Promise<void>> = {
  rollout: () => recordRollout('rollout.json'),
  'rollout-per-turn': () => recordRollout('rollout-per-turn.json', ['rollout.activityPer=turn']),
  'rollout-local-turn-swept': () =>
    recordRollout('rollout-local-turn-swept.json', ['rollout.activityPer=turn', 'rollout.llmCalls=local']),
  'training-step': recordTraining,
};

async function record(names: string[]): Promise<void> {
  for (const name of names) {
    const recorder = RECORDERS[name];
    if (!recorder) throw new Error(`unknown history "${name}"; known: ${Object.keys(RECORDERS).join(', ')}`);
    await recorder();
  }
}

if (require.main === module) {
  installTemporalLogging('ERROR');
  const names = process.argv.slice(2);
  record(names.length > 0 ? names : Object.keys(RECORDERS))
    .then(() => teardownSharedTestEnv())
    .then(() => console.log(`recorded histories in ${HISTORIES_DIR}`))
    .catch((error: unknown) => {
      console.error(error);
      process.exit(1);
    });
}
