import { cpus, platform, release, totalmem } from 'node:os';
import type { StepDialogues } from '../../src/core/training/dialogueStreamState.js';
import { policySlotLimit, type DialogueKind, type Options, type Weights } from './options.js';
import { replicaUpdatesOverrides, type RunResult } from './pipelineRun.js';
import type { ReplicaUpdates } from '../../src/core/training/trainingSettingsSchema.js';
import { limitSpeedup, trainerBoundSpeedup } from './throughput.js';

/** One row of bench/results/pipeline.json: the four required fields first, then extras. */
export interface Row {
  staleness: number;
  t_over_r: number;
  steps_per_hour: number;
  speedup: number;
  wall_s: number;
  seconds_per_step: number;
  limit_speedup: number;
  /**
   * The synchronous run's seconds per step over this run's trainer step time: what no overlap can
   * beat (every step needs the trainer); null for the synchronous run itself.
   */
  trainer_bound_speedup: number | null;
  min_step_seconds: number;
  trainer_seconds_mean: number;
  step_intervals_s: number[];
  /** What each step published: a LoRA adapter, or full weights (staleness > 0: in-flight updates). */
  weights: Weights;
  /** How each step gathered its dialogues: all of its own (planned), or the first whole groups to finish. */
  step_dialogues: StepDialogues;
  /** fixed, or long-tailed (lognormal call latencies, 2 to 8 turns per dialogue). */
  dialogues: DialogueKind;
  /** Dialogues kept running (firstFinished; planned: a step's). */
  max_in_flight: number;
  /**
   * The LLM work paid per dialogue trained on: dialogues started over dialogues taken by a step
   * (firstFinished; the rest were dropped as stale, or cancelled at the end). Null for planned steps.
   */
  started_per_trained: number | null;
  /** Stand-in vLLM replicas, and how a step's publish reached them: every one, or one in turn. */
  replicas: number;
  replica_updates: ReplicaUpdates;
  /** Sequences each stand-in vLLM served at once; null: no limit. */
  policy_slots: number | null;
}

export interface Measured {
  weights: Weights;
  staleness: number;
  stepDialogues: StepDialogues;
  tOverR: number;
  padSeconds: number;
  result: RunResult;
}

const round = (x: number, digits = 3) => Number(x.toFixed(digits));

/**
 * Rows in measurement order; speedup against the synchronous run (staleness 0, planned steps) of the
 * same weights at the same T/R (always measured).
 */
export function toRows(measured: Measured[], rolloutSeconds: number, options: Options): Row[] {
  return measured.map((m) => {
    const base = measured.find(
      (b) => b.staleness === 0 && b.stepDialogues === 'planned' && b.tOverR === m.tOverR && b.weights === m.weights,
    );
    if (!base) throw new Error(`no staleness-0 run for T/R ${m.tOverR} (${m.weights})`);
    return {
      staleness: m.staleness,
      t_over_r: m.tOverR,
      steps_per_hour: round(m.result.stepsPerHour, 1),
      speedup: round(m.result.stepsPerHour / base.result.stepsPerHour),
      wall_s: round(m.result.wallS, 1),
      seconds_per_step: round(m.result.secondsPerStep),
      limit_speedup: m.staleness === 0 ? 1 : round(limitSpeedup(rolloutSeconds, m.padSeconds)),
      trainer_bound_speedup:
        m === base ? null : round(trainerBoundSpeedup(base.result.secondsPerStep, m.result.trainerSecondsMean)),
      min_step_seconds: round(m.padSeconds),
      trainer_seconds_mean: round(m.result.trainerSecondsMean),
      step_intervals_s: m.result.stepIntervalsS.map((s) => round(s, 2)),
      weights: m.weights,
      step_dialogues: m.stepDialogues,
      dialogues: options.dialogues,
      max_in_flight: m.stepDialogues === 'firstFinished' ? options.inFlight : options.scenarios * options.samples,
      started_per_trained: m.result.stream
        ? round(m.result.stream.started / Math.max(1, m.result.stream.taken), 2)
        : null,
      replicas: options.replicas,
      replica_updates:
        replicaUpdatesOverrides(options.replicaUpdates, m.weights, m.staleness).length > 0 ? 'inTurn' : 'every',
      policy_slots: policySlotLimit(options),
    };
  });
}

export function table(rows: Row[], rolloutSeconds: number): string {
  const lines = [
    `R (rollout seconds per step, calibration) = ${rolloutSeconds.toFixed(2)}${rows[0]?.policy_slots ? `; policy slots per stand-in vLLM = ${rows[0].policy_slots}` : ''}`,
    '',
    'weights T/R   staleness steps         |      T s | steps/hour  s/step | speedup  limit  bound | trainer s  wall s | started/trained',
  ];
  for (const r of rows) {
    lines.push(
      `${r.weights.padEnd(7)} ${String(r.t_over_r).padEnd(5)} ${String(r.staleness).padStart(9)} ${r.step_dialogues.padEnd(13)} | ${r.min_step_seconds.toFixed(2).padStart(8)} | ${r.steps_per_hour.toFixed(0).padStart(10)} ${r.seconds_per_step.toFixed(2).padStart(7)} | ${r.speedup.toFixed(2).padStart(7)} ${r.limit_speedup.toFixed(2).padStart(6)} ${(r.trainer_bound_speedup === null ? '-' : r.trainer_bound_speedup.toFixed(2)).padStart(6)} | ${r.trainer_seconds_mean.toFixed(2).padStart(9)} ${r.wall_s.toFixed(0).padStart(7)} | ${r.started_per_trained === null ? '-' : r.started_per_trained.toFixed(2)}`,
    );
  }
  return lines.join('\n');
}

export function machine(): Record<string, unknown> {
  return {
    cpus: cpus().length,
    cpuModel: cpus()[0]?.model ?? null,
    memoryGiB: round(totalmem() / 2 ** 30, 1),
    platform: `${platform()} ${release()}`,
    node: process.version,
  };
}

export function resultsFile(
  options: Options,
  calibration: { seconds: number; optimizerSeconds: number; steps: unknown },
  rows: Row[],
): string {
  return `${JSON.stringify(
    {
      generatedAt: new Date().toISOString(),
      machine: machine(),
      options: { ...options, out: undefined },
      calibration: {
        rollout_seconds_per_step: round(calibration.seconds),
        unpadded_optimizer_seconds_per_step: round(calibration.optimizerSeconds),
        steps: calibration.steps,
      },
      rows,
    },
    null,
    2,
  )}\n`;
}
