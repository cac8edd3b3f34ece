import { trainingStatusQuery, trainingWorkflowId, type TrainingStatus } from '../../src/workflows/training.js';
import type { TrainingRig } from './trainingRig.js';
import { answered } from './eventually.js';

/** Asks the run's status until `predicate` holds: the condition is the run's own report, not elapsed time. */
export async function statusWhen(
  rig: Pick<TrainingRig, 'client'>,
  run: string,
  predicate: (s: TrainingStatus) => boolean,
  what: string,
  timeoutMs = 120_000,
): Promise<TrainingStatus> {
  const handle = rig.client.workflow.getHandle(trainingWorkflowId(run));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await answered(() => handle.query(trainingStatusQuery));
    if (predicate(status)) return status;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; last status ${JSON.stringify(status)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
