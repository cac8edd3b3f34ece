import { loadConfig } from '../../src/config/load.js';
import type { StepDialogues } from '../../src/core/training/dialogueStreamState.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { trainingStatusQuery } from '../../src/workflows/trainingControl.js';
import type { TrainingRig } from '../../test/support/trainingRig.js';
import type { ReplicaUpdates } from '../../src/core/training/trainingSettingsSchema.js';
import type { Weights } from './options.js';
import { stepTimings, type StepTimings } from '../training/history.js';
import { steadyThroughput, type Throughput } from './throughput.js';

export interface RunResult extends Throughput {
  run: string;
  wallS: number;
  steps: number;
  /** Mean of the trainer's own seconds per step (the pad included). */
  trainerSecondsMean: number;
  /** Phases per step from the Temporal histories; only for staleness 0, whose steps do not overlap. */
  phases: StepTimings[] | null;
  /** First-finished runs: dialogues started and trained on over the run (null: planned). */
  stream: { started: number; taken: number } | null;
}

/** Staleness S reaches the config only when S > 0, so the key is never sent where it is not needed. */
export function stalenessOverrides(staleness: number): string[] {
  return staleness > 0 ? [`training.maxStaleness=${staleness}`] : [];
}

/** Steps that take the first finished dialogues keep `inFlight` running; planned steps send nothing. */
export function stepDialoguesOverrides(stepDialogues: StepDialogues, inFlight: number): string[] {
  return stepDialogues === 'firstFinished'
    ? ['training.stepDialogues=firstFinished', `training.maxInFlight=${inFlight}`]
    : [];
}

/** Fails before anything starts when this checkout's config schema does not take a requested staleness. */
export function checkStalenessAccepted(staleness: number[]): void {
  for (const s of staleness) loadConfig({ env: {}, set: stalenessOverrides(s) });
}

/**
 * Replicas updated in turn where the config takes it (full weights with in-flight updates); every
 * other run, its staleness-0 baseline included, publishes to every replica.
 */
export function replicaUpdatesOverrides(updates: ReplicaUpdates, weights: Weights, staleness: number): string[] {
  return updates === 'inTurn' && weights === 'full' && staleness > 0 ? ['training.publish.replicaUpdates=inTurn'] : [];
}

/** One training run on the rig (its workers started), followed to the end. */
export async function runTraining(
  rig: TrainingRig,
  run: string,
  staleness: number,
  gather: { stepDialogues: StepDialogues; inFlight: number } = { stepDialogues: 'planned', inFlight: 0 },
  extra: string[] = [],
): Promise<RunResult> {
  const config = loadConfig({
    env: {},
    set: [
      ...rig.configSet,
      ...stalenessOverrides(staleness),
      ...stepDialoguesOverrides(gather.stepDialogues, gather.inFlight),
      ...extra,
    ],
  });
  const started = performance.now();
  const { handle } = await rig.start(run, config);
  const firstRunId = (handle as { firstExecutionRunId?: string }).firstExecutionRunId;
  if (!firstRunId) throw new Error(`run ${run} already existed`);
  await handle.result();
  const wallS = (performance.now() - started) / 1000;
  const stream = (await handle.query(trainingStatusQuery)).stream;
  const records = await rig.metrics(run);
  const phases =
    staleness === 0 && gather.stepDialogues === 'planned'
      ? await stepTimings(rig.client, trainingWorkflowId(run), firstRunId)
      : null;
  const trainerSeconds = records.map((r) => r.trainer.seconds);
  return {
    run,
    wallS,
    steps: records.length,
    trainerSecondsMean: trainerSeconds.reduce((a, b) => a + b, 0) / Math.max(1, trainerSeconds.length),
    phases,
    stream: stream ? { started: stream.started, taken: stream.taken } : null,
    ...steadyThroughput(records),
  };
}
