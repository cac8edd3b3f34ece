/**
 * Training benchmark: wall time of a training step and its parts (rollouts, optimizer, publish)
 * with the fake LLM at a fixed latency, and what orchestration adds compared with the same calls
 * made directly (bench/training/direct.ts). A benchmark, not a test: nothing is asserted.
 *
 *   npm run bench:training [-- --latencies 0,100 --steps 3]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { trainingSettingsFromConfig } from '../../src/config/trainingSettingsFromConfig.js';
import { REPO_ROOT } from '../../src/paths.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { teardownSharedTestEnv } from '../../test/support/temporalEnv.js';
import { createTrainingRig, TINY_TRAINING } from '../../test/support/trainingRig.js';
import { runDirect, type DirectStep } from './direct.js';
import { stepTimings, type StepTimings } from './history.js';

const HELP = `Training benchmark: one training step's wall time and its parts, Attune (Temporal) vs the same calls made directly.

Usage: npm run bench:training [-- options]

  --latencies LIST   fake simulator latency per call, ms (default 0,100)
  --steps N          training steps per latency and variant (default 3)
  --scenarios N      scenarios per step (default 4)
  --samples N        samples (dialogues) per scenario (default 4)
  --turns N          assistant turns per dialogue (default 4)
  --in-flight N      dialogues at once (default 16)
  --out FILE         results file (default bench/results/training.json)
  --help             this text

The policy is the trainer's tiny random model (real sampling on CPU); the simulated user is the
fake OpenAI server (emotion change 0, so every dialogue runs all turns). Phases come from the
Temporal histories (server event times). A step is counted from workflow start (for step 1: from
the end of ensureTrainerRun) to continue-as-new / completion.`;

const { values } = parseArgs({
  options: {
    latencies: { type: 'string', default: '0,100' },
    steps: { type: 'string', default: '3' },
    scenarios: { type: 'string', default: '4' },
    samples: { type: 'string', default: '4' },
    turns: { type: 'string', default: '4' },
    'in-flight': { type: 'string', default: '16' },
    out: { type: 'string', default: resolve(REPO_ROOT, 'bench/results/training.json') },
    help: { type: 'boolean', default: false },
  },
});
if (values.help) {
  process.stdout.write(`${HELP}\n`);
  process.exit(0);
}

const latencies = values.latencies.split(',').map(Number);
const steps = Number(values.steps);
const extra = [
  'training.evalEvery=0',
  `training.scenariosPerStep=${values.scenarios}`,
  `training.samplesPerScenario=${values.samples}`,
  `training.dialogue.maxTurns=${values.turns}`,
  `training.maxInFlight=${values['in-flight']}`,
];

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
const s = (ms: number) => (ms / 1000).toFixed(2);

interface Cell {
  latencyMs: number;
  attune: { steps: StepTimings[]; mean: Omit<StepTimings, 'step'> };
  direct: { steps: DirectStep[]; mean: Omit<DirectStep, 'step' | 'samples'> };
  overhead: { ratio: number; addedSecondsPerStep: number; rolloutsRatio: number; optimizerRatio: number };
}

function meanOf<T extends object>(rows: T[], keys: (keyof T)[]): Record<string, number> {
  return Object.fromEntries(keys.map((k) => [k, mean(rows.map((r) => r[k] as number))]));
}

async function measure(latencyMs: number): Promise<Cell> {
  const rig = await createTrainingRig({
    set: [...TINY_TRAINING('grpo', steps), ...extra],
    behaviour: { latencyMs, analysis: () => ({ emotionChange: 0 }) },
  });
  try {
    const run = `bench-l${latencyMs}-${process.pid}`;
    await rig.startWorkers();
    process.stderr.write(`latency ${latencyMs} ms: attune, ${steps} steps...\n`);
    const { handle } = await rig.start(run);
    const firstRunId = (handle as { firstExecutionRunId?: string }).firstExecutionRunId;
    if (!firstRunId) throw new Error(`run ${run} already existed`);
    await handle.result();
    const attuneSteps = await stepTimings(rig.client, trainingWorkflowId(run), firstRunId);
    await rig.stopWorkers();
    process.stderr.write(`latency ${latencyMs} ms: direct, ${steps} steps...\n`);
    const directSteps = await runDirect(trainingSettingsFromConfig(rig.config, `${run}-direct`), steps);
    const a = meanOf(attuneSteps, [
      'totalMs',
      'rolloutsMs',
      'optimizerMs',
      'publishMs',
      'otherMs',
    ]) as Cell['attune']['mean'];
    const d = meanOf(directSteps, ['totalMs', 'rolloutsMs', 'optimizerMs', 'publishMs']) as Cell['direct']['mean'];
    return {
      latencyMs,
      attune: { steps: attuneSteps, mean: a },
      direct: { steps: directSteps, mean: d },
      overhead: {
        ratio: a.totalMs / d.totalMs,
        addedSecondsPerStep: (a.totalMs - d.totalMs) / 1000,
        rolloutsRatio: a.rolloutsMs / d.rolloutsMs,
        optimizerRatio: a.optimizerMs / d.optimizerMs,
      },
    };
  } finally {
    await rig.close();
  }
}

async function main(): Promise<void> {
  installTemporalLogging('ERROR');
  const cells: Cell[] = [];
  try {
    for (const latency of latencies) cells.push(await measure(latency));
  } finally {
    await teardownSharedTestEnv();
  }
  const dialogues = Number(values.scenarios) * Number(values.samples);
  const lines = [
    `Training step, ${dialogues} dialogues x ${values.turns} turns, ${values['in-flight']} in flight, ${steps} steps per cell, mean seconds per step (${cpus().length} CPUs)`,
    '',
    'latency | attune: total  rollouts  optimizer  publish  other | direct: total  rollouts  optimizer | overhead: x     +s/step',
  ];
  for (const c of cells) {
    const a = c.attune.mean;
    const d = c.direct.mean;
    lines.push(
      `${`${c.latencyMs} ms`.padStart(7)} | ${s(a.totalMs).padStart(12)} ${s(a.rolloutsMs).padStart(9)} ${s(a.optimizerMs).padStart(10)} ${s(a.publishMs).padStart(8)} ${s(a.otherMs).padStart(6)} | ${s(d.totalMs).padStart(13)} ${s(d.rolloutsMs).padStart(9)} ${s(d.optimizerMs).padStart(10)} | ${c.overhead.ratio.toFixed(2).padStart(11)} ${c.overhead.addedSecondsPerStep.toFixed(2).padStart(9)}`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  mkdirSync(dirname(values.out), { recursive: true });
  writeFileSync(
    values.out,
    `${JSON.stringify(
      {
        benchmark: 'training',
        time: new Date().toISOString(),
        cpus: cpus().length,
        setup: {
          steps,
          scenariosPerStep: Number(values.scenarios),
          samplesPerScenario: Number(values.samples),
          maxTurns: Number(values.turns),
          maxInFlight: Number(values['in-flight']),
          policy: 'trainer tiny-random',
          simulator: 'fake OpenAI, emotionChange 0',
        },
        cells,
      },
      null,
      2,
    )}\n`,
  );
  process.stdout.write(`Wrote ${values.out}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
