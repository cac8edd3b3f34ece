/**
 * Chaos soak: a tiny training run disturbed by faults chosen from the seed (process kills, the
 * trainer's fault switch, endpoint outages), compared with an undisturbed run of the same seed.
 * Exits non-zero when an invariant fails.
 *
 *   npm run chaos [-- --steps 6 --faults 4 --seed 7]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../src/paths.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { TINY_TRAINING } from '../../test/support/trainingRig.js';
import { checkInvariants, recoverySeconds } from './invariants.js';
import { ALL_FAULT_KINDS, FAULT_KINDS, planFaults, type FaultKind } from './plan.js';
import { disturbedRun, undisturbedRun } from './runs.js';
import { ChaosStack, now, sleep } from './stack.js';
import { defaultResultsFile } from '../resultsFile.js';

const HELP = `Chaos soak: a tiny training run disturbed by faults chosen from the seed, compared with an
undisturbed run of the same seed.

Usage: npm run chaos [-- options]

  --steps N         training steps (default 10)
  --faults N        faults to inject, at most one per step and phase (default 4)
  --seed N          chooses the faults and their steps, and seeds both runs (default 1)
  --kinds LIST      comma-separated fault kinds to choose from (default: all)
  --timeout S       give up (and fail) after S seconds (default 1800)
  --out FILE        results: the plan, the faults injected, each invariant and the recoveries
                    (default bench/results/chaos.json)
  --help            this text

Fault kinds:
${ALL_FAULT_KINDS.map((k) => `  ${k.padEnd(22)} ${FAULT_KINDS[k].describe} (${FAULT_KINDS[k].phase})`).join('\n')}

The run: PPO on the tiny random model served by the real trainer, sampling at temperature 1 (a
dialogue met by an outage waits at its failed call and goes on from it after the resume, so the run
still matches the undisturbed one), 4 dialogues per step from scenarios/train,
2 turns, the fake OpenAI server as the simulated user, a real Temporal dev server (SQLite) and
worker processes. A step whose dialogues wait at an outage (or fail) waits for the operator; the
soak plays the operator (brings the endpoint back, then resumes: the waiting dialogues go on). Checked at the end: every fault injected, all steps
completed, the trainer applied each step once, one metrics line per step, every dialogue trained on
once, metrics identical to the undisturbed run. Recovery: from a killed process's return to the
run's next successful LLM call (or the run's end).

The last line reads: chaos: N faults injected, invariants held, max recovery S s`;

const ROLLOUTS_PER_STEP = 4;
// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
const BEHAVIOUR = {
  latencyMs: 100,
  analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
};

function soakSet(steps: number, seed: number): string[] {
  return [
    ...TINY_TRAINING('ppo', steps),
    `training.seed=${seed}`,
    `scenarios.train=${join(REPO_ROOT, 'scenarios', 'train')}`,
    `training.scenariosPerStep=${ROLLOUTS_PER_STEP}`,
    // Sampling as in training: outages are waited out at the failed call, never rolled out again.
    'policy.temperature=1',
    // Two updates per step, so the trainer's during_update fault can fire.
    'training.hyperparameters.ppo_epochs=2',
    // Any failed dialogue stops the step for the operator instead of training on fewer.
    'training.maxFailedShare=0',
    'training.trainer.heartbeatTimeoutMs=3000',
    'policy.retry.maximumAttempts=3',
    'simulator.retry.maximumAttempts=3',
  ];
}

function options() {
  const { values } = parseArgs({
    options: {
      steps: { type: 'string', default: '10' },
      faults: { type: 'string', default: '4' },
      seed: { type: 'string', default: '1' },
      kinds: { type: 'string' },
      timeout: { type: 'string', default: '1800' },
      out: { type: 'string' },
      help: { type: 'boolean', default: false },
    },
  });
  if (values.help) {
    process.stdout.write(`${HELP}\n`);
    process.exit(0);
  }
  const int = (name: 'steps' | 'faults' | 'seed' | 'timeout', min: number): number => {
    const n = Number(values[name]);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} ${values[name]}: expected an integer >= ${min}`);
    return n;
  };
  const kinds = (values.kinds?.split(',') ?? ALL_FAULT_KINDS).map((k) => k.trim()) as FaultKind[];
  const unknown = kinds.filter((k) => !(k in FAULT_KINDS));
  if (unknown.length > 0) throw new Error(`--kinds: unknown ${unknown.join(', ')} (see --help)`);
  return {
    steps: int('steps', 1),
    faults: int('faults', 0),
    seed: int('seed', 0),
    timeout: int('timeout', 1),
    kinds,
    out: resolve(values.out ?? defaultResultsFile('chaos', null)),
  };
}

function writeResults(file: string, results: object): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

/**
 * Once clean-up begins, calls still under way (a status query retrying against a closed
 * connection, say) may fail: that must not end the process before every child is stopped.
 */
function ignoreStragglers(): void {
  const ignore = () => {};
  process.on('uncaughtException', ignore);
  process.on('unhandledRejection', ignore);
}

/** Runs the soak; its verdict line comes back to be printed last, after every process is stopped. */
async function main(): Promise<{ code: number; verdict: string }> {
  const opts = options();
  const plan = planFaults({ seed: opts.seed, steps: opts.steps, count: opts.faults, kinds: opts.kinds });
  installTemporalLogging('ERROR');
  const t0 = now();
  const say = (line: string) => process.stdout.write(`[${((now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
  say(`seed ${opts.seed}, ${opts.steps} steps, ${plan.length} faults planned:`);
  for (const f of plan) say(`  ${f.n}. step ${f.step} (${f.phase}): ${f.kind}`);

  const stack = await ChaosStack.start();
  const cleanUp = async (signal: string) => {
    process.stdout.write(`chaos: ${signal}: stopping every process it started\n`);
    ignoreStragglers();
    await stack.close();
    process.exit(130);
  };
  process.once('SIGINT', () => void cleanUp('SIGINT'));
  process.once('SIGTERM', () => void cleanUp('SIGTERM'));
  const deadline = sleep(opts.timeout * 1000).then(() => {
    throw new Error(`gave up after ${opts.timeout} s (--timeout)`);
  });
  deadline.catch(() => {});
  try {
    const set = soakSet(opts.steps, opts.seed);
    const baseline = await undisturbedRun(stack, set, BEHAVIOUR, deadline, say);
    const { disturbed, faults } = await disturbedRun({ stack, set, behaviour: BEHAVIOUR, plan, deadline, say });
    const { rig, runName, runError, stepsApplied, runEndMs } = disturbed;
    const recoveries = recoverySeconds(faults, rig.fake.calls, runEndMs);
    for (const f of faults)
      if (recoveries.has(f.fault.n))
        say(
          `fault ${f.fault.n} (${f.fault.kind}): next successful LLM call ${recoveries.get(f.fault.n)!.toFixed(1)} s after it was back`,
        );
    const checks = checkInvariants({
      steps: opts.steps,
      rolloutsPerStep: ROLLOUTS_PER_STEP,
      stepsApplied,
      runError,
      trainerStep: await rig.trainer
        .runState(runName)
        .then((s) => s.step)
        .catch(() => null),
      metrics: await rig.metrics(runName),
      baseline,
      faults,
    });
    for (const c of checks) say(`invariant: ${c.name}: ${c.ok ? 'ok' : 'VIOLATED'}${c.detail ? ` (${c.detail})` : ''}`);
    const injected = faults.filter((f) => f.injected).length;
    const kills = faults.filter((f) => f.killed && recoveries.has(f.fault.n)).map((f) => recoveries.get(f.fault.n)!);
    const maxRecovery = kills.length > 0 ? Math.max(...kills) : 0;
    const wallS = (now() - t0) / 1000;
    say(`wall time ${wallS.toFixed(0)} s`);
    const failed = checks.filter((c) => !c.ok);
    writeResults(opts.out, {
      seed: opts.seed,
      steps: opts.steps,
      planned: plan,
      injected,
      invariantsHeld: failed.length === 0,
      invariants: checks,
      recoverySeconds: Object.fromEntries(recoveries),
      maxRecoverySeconds: maxRecovery,
      wallS,
    });
    say(`wrote ${opts.out}`);
    if (failed.length > 0)
      return {
        code: 1,
        verdict: `chaos: ${injected} faults injected, invariants VIOLATED: ${failed.map((c) => c.name).join('; ')}`,
      };
    return {
      code: 0,
      verdict: `chaos: ${injected} faults injected, invariants held, max recovery ${maxRecovery.toFixed(1)} s`,
    };
  } finally {
    say('stopping every process the soak started');
    ignoreStragglers();
    await stack.close();
  }
}

main().then(
  ({ code, verdict }) => {
    process.stdout.write(`${verdict}\n`);
    process.exit(code);
  },
  (error: unknown) => {
    process.stdout.write(`chaos: failed: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
