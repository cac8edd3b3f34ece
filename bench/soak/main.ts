/**
 * Soak: a multi-day full-weight run played in well under an hour (see `--help`). Exits 1 when a
 * check fails, naming it; the last line reads like chaos's.
 *
 *   npm run soak [-- --quick] [-- --seed 1 --steps 200]
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { runTranscriptsPrefix } from '../../src/artifacts/keys.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import { TINY_TRAINING } from '../../test/support/trainingRig.js';
import { transcriptsOf } from '../chaos/calls.js';
import { Operator } from '../chaos/operator.js';
import { sleep, statusOf } from '../chaos/stack.js';
import {
  diskCheck,
  faultsCheck,
  historiesCheck,
  pausedCheck,
  rssCheck,
  stepsChecks,
  tmpDirsCheck,
  versionsCheck,
  type Check,
} from './checks.js';
import { historySizes } from './histories.js';
import { injectSoakFault, type InjectedSoakFault, type SoakRun } from './inject.js';
import { HELP, soakOptions, type SoakOptions } from './options.js';
import { planSoakFaults } from './plan.js';
import { plantAfterRun, plantBeforeStart, plantsFromEnv } from './plants.js';
import { tmpDirsUnder } from './procfs.js';
import { retainedOnDisk, runDirBytes } from './retained.js';
import type { SoakResults } from './results.js';
import { Sampler } from './sampler.js';
import { SoakStack } from './stack.js';
import { windowFigures, windowsOf } from './windows.js';

const RUN_NAME = 'soak';
/** GRPO: 2 scenarios x 2 samples, 2 turns each (TINY_TRAINING). */
const ROLLOUTS_PER_STEP = 4;
/**
 * What retention keeps: the trainer's last 2 snapshots (KEEP_SNAPSHOTS) beside step 0's checkpoint
 * (the run's initial weights, never pruned), `publish.keep` (2) exports, and each publisher's 2 newest
 * downloads (`publish.keep`).
 */
const RETENTION = { checkpoints: 3, exports: 2, downloads: 4 };

function soakSet(o: SoakOptions): string[] {
  return [
    ...TINY_TRAINING('grpo', o.steps),
    `training.seed=${o.seed}`,
    // Full weights (no LoRA) published into vLLM; a snapshot every few steps, the steps between
    // committed by their log entry, so a trainer kill recovers by snapshot + replay.
    'training.publish.mode=vllm',
    `training.snapshotEvery=${o.quick ? 2 : 5}`,
    'training.evalEvery=0',
    // Any failed dialogue stops the step for the operator (the soak), so none is dropped unseen.
    'training.maxFailedShare=0',
    'training.trainer.heartbeatTimeoutMs=3000',
  ];
}

/** Once clean-up begins, calls still under way may fail: that must not end the process before every child is stopped. */
function ignoreStragglers(): void {
  process.on('uncaughtException', () => {});
  process.on('unhandledRejection', () => {});
}

function writeResults(file: string, results: SoakResults): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, `${JSON.stringify(results, null, 2)}\n`);
}

async function main(): Promise<{ code: number; verdict: string }> {
  const parsed = soakOptions();
  if (parsed === 'help') {
    process.stdout.write(`${HELP}\n`);
    return { code: 0, verdict: '' };
  }
  const opts = parsed;
  const plan = planSoakFaults({ seed: opts.seed, steps: opts.steps, count: opts.faults });
  installTemporalLogging('ERROR');
  const t0 = Date.now();
  const say = (line: string) =>
    process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(7)} s] ${line}\n`);
  say(`seed ${opts.seed}, ${opts.steps} steps, ${plan.length} faults planned:`);
  for (const f of plan)
    say(
      `  ${f.n}. step ${f.step}: ${f.kind}${f.kind.includes('replica') || f.kind === 'resume-fails' ? ` (r${f.replica + 1})` : ''}`,
    );
  const plants = plantsFromEnv();
  if (plants.size > 0) say(`PLANTED (test-only): ${[...plants].join(', ')}`);
  plantBeforeStart(plants);
  const set = soakSet(opts);
  const stack = await SoakStack.start(set, say);
  const cleanUp = async (signal: string) => {
    process.stdout.write(`soak: ${signal}: stopping every process it started\n`);
    ignoreStragglers();
    await stack.close();
    process.exit(130);
  };
  process.once('SIGINT', () => void cleanUp('SIGINT'));
  process.once('SIGTERM', () => void cleanUp('SIGTERM'));
  const deadline = sleep(opts.timeoutS * 1000).then(() => {
    throw new Error(`gave up after ${opts.timeoutS} s (--timeout)`);
  });
  deadline.catch(() => {});
  try {
    const { rig } = stack;
    const { handle } = await rig.start(RUN_NAME);
    say(`run ${RUN_NAME} started`);
    const operator = new Operator(handle, say);
    operator.start();
    const sampler = new Sampler(stack, async () => (await statusOf(handle))?.step ?? null, 2000);
    sampler.start();
    let markEnded: () => void = () => {};
    const ended = new Promise<void>((resolve) => (markEnded = resolve));
    const run: SoakRun = { stack, handle, runName: RUN_NAME, operator, ended, outageMs: 10_000, say };
    // Faults one after another: each waits for its step, so two never overlap.
    const injecting = (async () => {
      const out: InjectedSoakFault[] = [];
      for (const f of plan) out.push(await injectSoakFault(run, f, plan.length));
      return out;
    })();
    const progress = setInterval(
      () => {
        const last = sampler.samples.at(-1);
        if (last) say(`step ${last.step}/${opts.steps}`);
      },
      opts.quick ? 15_000 : 60_000,
    );
    let stepsApplied: number | null = null;
    let runError: string | null = null;
    try {
      stepsApplied = (await Promise.race([handle.result(), deadline])).stepsApplied;
    } catch (error) {
      runError = (error as Error).message;
    }
    clearInterval(progress);
    const runS = (Date.now() - t0) / 1000;
    markEnded();
    await operator.stop();
    const faults = await injecting;
    await sampler.sampleNow();
    await sampler.stop();
    say(`run ${runError ?? `ended, ${stepsApplied} steps applied`}; operator resumed ${operator.resumes}x; measuring`);

    await plantAfterRun(plants, stack, RUN_NAME);
    const transcripts = await transcriptsOf(rig.store, runTranscriptsPrefix(RUN_NAME));
    const answers = stack.replicas.flatMap((r) => r.answers());
    const paused = await Promise.all(
      stack.replicas.map(async (r) => ({ name: r.name, paused: await r.isPaused().catch(() => null) })),
    );
    const tmpLeft = stack.downloadDirs.flatMap((dir) => tmpDirsUnder(dir));
    const retained = retainedOnDisk(stack.trainerStateDir, RUN_NAME, stack.downloadDirs);
    const histories = await historySizes(rig.client, RUN_NAME, (at) => sampler.stepAt(at));
    const windows = windowsOf(opts.steps, opts.window).map((w) => windowFigures(w, sampler.samples, histories));
    const checks: Check[] = [
      faultsCheck(faults),
      ...stepsChecks({
        steps: opts.steps,
        rolloutsPerStep: ROLLOUTS_PER_STEP,
        stepsApplied,
        runError,
        trainerStep: await rig.trainer
          .runState(RUN_NAME)
          .then((s) => s.step)
          .catch(() => null),
        metrics: await rig.metrics(RUN_NAME),
      }),
      versionsCheck(RUN_NAME, transcripts, answers, opts.steps, ROLLOUTS_PER_STEP),
      pausedCheck(paused),
      tmpDirsCheck(tmpLeft),
      diskCheck(windows, retained, RETENTION, !opts.quick),
      rssCheck(windows, !opts.quick),
      historiesCheck(histories, plants.has('history') ? { events: 20, bytes: 50 * 2 ** 20 } : undefined),
    ];
    for (const c of checks) say(`check: ${c.name}: ${c.ok ? 'ok' : 'BREACHED'} (${c.detail})`);
    for (const w of windows)
      say(
        `steps ${w.fromStep}-${w.toStep}: trainer state ${(w.maxTrainerStateBytes / 2 ** 20).toFixed(1)} MiB, downloads ${(w.maxDownloadBytes / 2 ** 20).toFixed(1)} MiB, RSS ${Object.entries(
          w.rssMiB,
        )
          .map(([r, v]) => `${r} ${v.median}`)
          .join(
            ', ',
          )} MiB, history max ${w.maxHistory.training.events}/${w.maxHistory.rollout.events} events (training/rollout)`,
      );
    const injected = faults.filter((f) => f.injected).length;
    const failed = checks.filter((c) => !c.ok);
    const wallS = (Date.now() - t0) / 1000;
    const stepsPerMinute = Number((((stepsApplied ?? 0) * 60) / runS).toFixed(2));
    writeResults(opts.out, {
      seed: opts.seed,
      steps: opts.steps,
      quick: opts.quick,
      planted: [...plants],
      window: opts.window,
      settings: set,
      planned: plan,
      faults: faults.map((f) => ({
        kind: f.fault.kind,
        step: f.fault.step,
        injected: f.injected,
        struckAtStep: f.struckAtStep,
        recoverySeconds: f.recoverySeconds,
        detail: f.detail,
        ...(f.error ? { error: f.error } : {}),
      })),
      injected,
      checksHeld: failed.length === 0,
      checks,
      operatorResumes: operator.resumes,
      windows,
      retained,
      trainerRunBytes: runDirBytes(stack.trainerStateDir, RUN_NAME),
      stepsPerMinute,
      wallS,
    });
    say(`wrote ${opts.out}`);
    const tail = `${stepsPerMinute} steps/min, wall ${wallS.toFixed(0)} s`;
    if (failed.length > 0)
      return {
        code: 1,
        verdict: `soak: ${stepsApplied ?? 0} steps, ${injected} faults injected, checks BREACHED: ${failed.map((c) => `${c.name} (${c.detail.slice(0, 200)})`).join('; ')}; ${tail}`,
      };
    const rss = checks.find((c) => c.name.startsWith('worker and trainer RSS'))!.detail;
    return {
      code: 0,
      verdict: `soak: ${stepsApplied} steps, ${injected} faults injected, checks held; ${tail}; RSS ${rss}`,
    };
  } finally {
    say('stopping every process the soak started');
    ignoreStragglers();
    await stack.close();
  }
}

main().then(
  ({ code, verdict }) => {
    if (verdict) process.stdout.write(`${verdict}\n`);
    process.exit(code);
  },
  (error: unknown) => {
    process.stdout.write(`soak: failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(1);
  },
);
