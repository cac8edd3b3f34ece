/**
 * Pipeline benchmark: steady-state training throughput with the rollouts of the next step
 * overlapping the optimizer step (training.maxStaleness > 0) against one after the other, for
 * optimizer-to-rollout time ratios T/R. A benchmark, not a test: nothing is asserted.
 *
 *   npm run bench:pipeline [-- --quick --staleness 0]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { teardownSharedTestEnv } from '../../test/support/temporalEnv.js';
import type { StepTimings } from '../training/history.js';
import { HELP, parseOptions, type Options } from './options.js';
import { checkStalenessAccepted, replicaUpdatesOverrides, runTraining } from './pipelineRun.js';
import { machine, resultsFile, table, toRows, type Measured } from './results.js';
import { withPaddedRig } from './stack.js';
import { VllmFacade } from './vllmFacade.js';

const progress = (message: string) => process.stderr.write(`${new Date().toISOString()} ${message}\n`);
const s = (ms: number) => (ms / 1000).toFixed(2);

function phaseLine(p: StepTimings): string {
  return `step ${p.step}: total ${s(p.totalMs)} s, rollouts ${s(p.rolloutsMs)}, optimizer ${s(p.optimizerMs)}, publish ${s(p.publishMs)}, other ${s(p.otherMs)}`;
}

interface Calibration {
  /** R */
  seconds: number;
  /** The trainer's own seconds per step without the pad: the shortest T the benchmark can set. */
  optimizerSeconds: number;
  steps: StepTimings[];
}

/** R: the rollout phase's seconds per step of an unpadded staleness-0 run, its first (warm-up) step left out. */
async function calibrate(options: Options, facades: VllmFacade[]): Promise<Calibration> {
  progress(`calibration: ${options.calibrationSteps} steps, staleness 0, no pad`);
  const result = await withPaddedRig(options, options.calibrationSteps, 0, facades, (rig) =>
    runTraining(rig, `pipe-calibration-${process.pid}`, 0),
  );
  const steps = result.phases ?? [];
  for (const p of steps) progress(`  ${phaseLine(p)}`);
  const steady = steps.slice(1);
  if (steady.length === 0) throw new Error('calibration: no step timings after the first step');
  const seconds = steady.reduce((a, p) => a + p.rolloutsMs, 0) / steady.length / 1000;
  const optimizerSeconds = result.trainerSecondsMean;
  progress(
    `calibration: R = ${seconds.toFixed(2)} s, unpadded optimizer step ${optimizerSeconds.toFixed(2)} s (wall ${result.wallS.toFixed(1)} s)`,
  );
  for (const tOverR of options.ratios)
    if (tOverR * seconds < optimizerSeconds)
      progress(
        `warning: T/R ${tOverR} asks for a ${(tOverR * seconds).toFixed(2)} s step, shorter than the unpadded one`,
      );
  return { seconds, optimizerSeconds, steps };
}

async function measureAll(options: Options, facades: VllmFacade[], rolloutSeconds: number): Promise<Measured[]> {
  const measured: Measured[] = [];
  for (const weights of options.weights)
    for (const tOverR of options.ratios) {
      const padSeconds = tOverR * rolloutSeconds;
      await withPaddedRig(
        options,
        options.steps,
        padSeconds,
        facades,
        async (rig) => {
          for (const staleness of options.staleness)
            // Staleness 0 is the baseline, planned whatever --step-dialogues says: taking the first
            // finished carries dialogues to later steps, which needs staleness 1 or more.
            for (const stepDialogues of staleness === 0 ? (['planned'] as const) : options.stepDialogues) {
              const tag = `${weights === 'lora' ? '' : `-${weights}`}${stepDialogues === 'planned' ? '' : '-ff'}`;
              const run = `pipe-r${String(tOverR).replace('.', 'p')}-s${staleness}${tag}-${process.pid}`;
              progress(
                `${weights} weights, T/R ${tOverR} (T = ${padSeconds.toFixed(2)} s), staleness ${staleness}, ${stepDialogues}: ${options.steps} steps`,
              );
              const result = await runTraining(
                rig,
                run,
                staleness,
                { stepDialogues, inFlight: options.inFlight },
                replicaUpdatesOverrides(options.replicaUpdates, weights, staleness),
              );
              for (const p of result.phases ?? []) progress(`  ${phaseLine(p)}`);
              progress(
                `  ${result.stepsPerHour.toFixed(0)} steps/hour, ${result.secondsPerStep.toFixed(2)} s/step, wall ${result.wallS.toFixed(1)} s, intervals ${result.stepIntervalsS.map((x) => x.toFixed(2)).join(' ')}`,
              );
              measured.push({ weights, staleness, stepDialogues, tOverR, padSeconds, result });
            }
        },
        weights,
      );
    }
  return measured;
}

async function main(): Promise<void> {
  const options = parseOptions(process.argv.slice(2));
  if (!options) {
    process.stdout.write(`${HELP}\n`);
    return;
  }
  checkStalenessAccepted(options.staleness);
  installTemporalLogging('ERROR');
  const started = performance.now();
  const facades = await Promise.all(Array.from({ length: options.replicas }, () => VllmFacade.start('fake-policy')));
  try {
    progress(`machine ${JSON.stringify(machine())}`);
    const calibration = await calibrate(options, facades);
    const measured = await measureAll(options, facades, calibration.seconds);
    const rows = toRows(measured, calibration.seconds, options);
    process.stdout.write(`${table(rows, calibration.seconds)}\n`);
    process.stdout.write(`Total wall time: ${((performance.now() - started) / 1000).toFixed(0)} s\n`);
    mkdirSync(dirname(options.out), { recursive: true });
    writeFileSync(options.out, resultsFile(options, calibration, rows));
    process.stdout.write(`Wrote ${options.out}\n`);
  } finally {
    for (const facade of facades) await facade.close();
    await teardownSharedTestEnv();
  }
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
