/**
 * Chaos soak: a tiny training run disturbed by faults chosen from the seed (process kills, the
 * trainer's fault switch, endpoint outages), compared with an undisturbed run of the same seed.
 * Exits non-zero when an invariant fails.
 *
 *   npm run chaos [-- --steps 6 --faults 4 --seed 7]
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { REPO_ROOT } from '../../src/paths.js';
import { installTemporalLogging } from '../../src/temporal/runtimeLogging.js';
import type { CallContext } from '../../test/support/fakeOpenAI.js';
import { TINY_TRAINING } from '../../test/support/trainingRig.js';
import { runTranscriptsPrefix } from '../../src/artifacts/keys.js';
import type { Transcript } from '../../src/core/transcript.js';
import { countCalls, transcriptsOf, type CallCounts, type LoggedCall } from './calls.js';
import type { InjectedFault } from './inject.js';
import { checkStreamInvariants } from './streamInvariants.js';
import { checkInvariants, recoverySeconds, RESAMPLED_MARK, takeoverSeconds } from './invariants.js';
import { ALL_FAULT_KINDS, FAULT_KINDS, planFaults, type FaultKind } from './plan.js';
import { disturbedRun, undisturbedRun } from './runs.js';
import { ChaosStack, now, sleep, statusOf } from './stack.js';
import { trainingWorkflowId } from '../../src/workflows/training.js';
import { samplesPerScenarioOf } from '../../src/config/crossFieldChecks.js';
import { defaultResultsFile } from '../resultsFile.js';

const HELP = `Chaos soak: a tiny training run disturbed by faults chosen from the seed, compared with an
undisturbed run of the same seed.

Usage: npm run chaos [-- options]

  --steps N         training steps (default 10)
  --faults N        faults to inject, at most one per step and phase (default 4)
  --seed N          chooses the faults and their steps, and seeds both runs (default 1)
  --kinds LIST      comma-separated fault kinds to choose from (default: all)
  --timeout S       give up (and fail) after S seconds (default 1800)
  --set KEY=VALUE   a config setting for both runs (repeatable), e.g. the per-call mode:
                    --set rollout.llmCalls=activity --set rollout.activityPer=call
                    or steps that take the first finished dialogues (no undisturbed run: which
                    dialogues finish first depends on timing; exactly-once's checks instead):
                    --set training.stepDialogues=firstFinished --set training.maxStaleness=1
                    and with full weights published to the fake as to vLLM (each step's publish
                    then runs while the next step trains): --set training.publish.mode=vllm
  --dump FILE       also write every logged call and transcript there, and every worker's log
                    (at debug: each journal claim and confirmation) beside it in FILE.workers.log
  --out FILE        results: the plan, the faults injected, each invariant and the recoveries
                    (default bench/results/chaos.json; chaos-per-call.json, chaos-first-finished.json)
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

Every call is counted (see bench/chaos/calls.ts): finished calls made twice, calls made by superseded
attempts, and transcripts whose turns do not chain, per fault kind and in total.

The last line reads: chaos: N faults injected, invariants held; M made twice, C not chaining (of T
transcripts), S superseded; max recovery R s`;

const ROLLOUTS_PER_STEP = 4;
// Simulator answers depend only on the request, so every run of the same seed sees the same dialogues.
// Openings differ per dialogue (persona and seed), so every dialogue's calls can be told apart by its opening.
const BEHAVIOUR = {
  latencyMs: 100,
  analysis: (ctx: { last: string }) => ({ emotionChange: (ctx.last.length % 7) - 3 }),
  opening: (ctx: CallContext) =>
    `Hey, it's ${ctx.persona ?? 'me'}. Can I talk to you about something that has been bugging me (${ctx.body.seed ?? 0})?`,
};

/**
 * The soak's scenarios: every training scenario without `firstMessage` (the simulator writes the
 * opening, as for the RLVER profiles) and two with one, so most dialogues open with a simulator call.
 */
function soakScenarios(dir: string): string {
  const from = join(REPO_ROOT, 'scenarios', 'train');
  const files = readdirSync(from)
    .filter((f) => f.endsWith('.yaml'))
    .sort();
  const opened = (f: string) => /^firstMessage:/m.test(readFileSync(join(from, f), 'utf8'));
  for (const f of [...files.filter((f) => !opened(f)), ...files.filter(opened).slice(0, 2)])
    writeFileSync(join(dir, f), readFileSync(join(from, f)));
  return dir;
}

const SNAPSHOT_EVERY = 3;

function soakSet(steps: number, seed: number, scenarios: string, extra: string[]): string[] {
  return [
    ...TINY_TRAINING('ppo', steps),
    // Full weights with a snapshot every 3 steps: most trainer faults strike between snapshots, and
    // recovery loads the last snapshot and replays the logged steps after it.
    `training.snapshotEvery=${SNAPSHOT_EVERY}`,
    `training.seed=${seed}`,
    `scenarios.train=${scenarios}`,
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
    ...extra,
  ];
}

function options() {
  const { values } = parseArgs({
    options: {
      steps: { type: 'string', default: '10' },
      faults: { type: 'string', default: '4' },
      seed: { type: 'string', default: '1' },
      kinds: { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      timeout: { type: 'string', default: '1800' },
      out: { type: 'string' },
      dump: { type: 'string' },
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
  const set = values.set ?? [];
  // Steps that take the first finished dialogues (`--set training.stepDialogues=firstFinished`).
  const firstFinished = set.includes('training.stepDialogues=firstFinished');
  return {
    steps: int('steps', 1),
    faults: int('faults', 0),
    seed: int('seed', 0),
    timeout: int('timeout', 1),
    kinds,
    set,
    dump: values.dump ? resolve(values.dump) : null,
    firstFinished,
    // The per-call and first-finished modes' results go to files of their own (bench/results/chaos-per-call.json).
    out: resolve(
      values.out ??
        defaultResultsFile(
          'chaos',
          set.includes('rollout.activityPer=call') ? 'per-call' : firstFinished ? 'first-finished' : null,
        ),
    ),
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

/** The first step with a transcript that recorded a sampling simulator's answer to a request made again. */
function resampledFrom(transcripts: Transcript[]): number | null {
  const steps = transcripts.flatMap((t) => (t.step !== null && RESAMPLED_MARK.test(JSON.stringify(t)) ? [t.step] : []));
  return steps.length > 0 ? Math.min(...steps) : null;
}

const countLine = (c: CallCounts): string =>
  `${c.madeTwice} made twice, ${c.chainFailures} not chaining (of ${c.transcripts} transcripts), ${c.superseded} superseded`;

/** Recovery seconds per fault kind (every fault of the kind). */
function byKind(faults: InjectedFault[], recoveries: Map<number, number>): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  for (const f of faults)
    if (recoveries.has(f.fault.n)) (out[f.fault.kind] ??= []).push(Number(recoveries.get(f.fault.n)!.toFixed(1)));
  return out;
}

/** Every call of the disturbed run counted against every transcript it left (bench/chaos/calls.ts). */
async function countEveryCall(
  disturbed: Awaited<ReturnType<typeof disturbedRun>>['disturbed'],
  faults: InjectedFault[],
  dump: string | null,
): Promise<CallCounts> {
  const { rig, proxy, runName, owners, processFaults } = disturbed;
  const calls: LoggedCall[] = [
    // The fake answers the policy too when it stands in for vLLM (training.publish.mode=vllm).
    ...rig.fake.calls.map((c) => ({
      ...c,
      source: c.role === 'policy' ? ('policy' as const) : ('simulator' as const),
    })),
    ...proxy.calls.map((c) => ({ ...c, source: 'policy' as const, role: 'policy' })),
  ];
  const struck = faults.filter((f) => f.injected);
  const when = (f: InjectedFault) => f.atMs ?? f.backAtMs ?? null;
  const transcripts = await transcriptsOf(rig.store, runTranscriptsPrefix(runName));
  if (dump) {
    writeResults(dump, { calls, processFaults, faults, transcripts });
    writeFileSync(
      `${dump}.workers.log`,
      disturbed
        .workerLogs()
        .map((w) => `=== worker pid ${w.pid}\n${w.log}`)
        .join('\n'),
    );
  }
  return countCalls({
    calls,
    owners,
    processFaults,
    transcripts,
    kindsOfStep: (step) => struck.filter((f) => f.fault.step === step).map((f) => f.fault.kind),
    kindOfTime: (atMs) => {
      const before = struck.filter((f) => when(f) !== null && when(f)! <= atMs && atMs - when(f)! < 120_000);
      const last = before.sort((a, b) => when(b)! - when(a)!)[0];
      return last ? [last.fault.kind] : [];
    },
  });
}

/** Runs the soak; its verdict line comes back to be printed last, after every process is stopped. */
async function main(): Promise<{ code: number; verdict: string }> {
  const opts = options();
  const plan = planFaults({
    seed: opts.seed,
    steps: opts.steps,
    count: opts.faults,
    kinds: opts.kinds,
    ...(opts.firstFinished && opts.steps > 1 ? { lastRolloutStep: opts.steps - 1 } : {}),
  });
  installTemporalLogging('ERROR');
  const t0 = now();
  const say = (line: string) => process.stdout.write(`[${((now() - t0) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);
  say(`seed ${opts.seed}, ${opts.steps} steps, ${plan.length} faults planned:`);
  for (const f of plan) say(`  ${f.n}. step ${f.step} (${f.phase}): ${f.kind}`);

  const scenarioDir = mkdtempSync(join(tmpdir(), 'attune-chaos-scenarios-'));
  const stack = await ChaosStack.start();
  if (opts.dump) stack.workerLogLevel = 'debug';
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
    const set = soakSet(opts.steps, opts.seed, soakScenarios(scenarioDir), opts.set);
    // Which dialogues finish first depends on timing: a first-finished run has no undisturbed twin.
    const baseline = opts.firstFinished ? null : await undisturbedRun(stack, set, BEHAVIOUR, deadline, say);
    const { disturbed, faults } = await disturbedRun({ stack, set, behaviour: BEHAVIOUR, plan, deadline, say });
    const { rig, runName, runError, stepsApplied, runEndMs } = disturbed;
    const recoveries = recoverySeconds(faults, rig.fake.calls, runEndMs);
    const transcripts = await transcriptsOf(rig.store, runTranscriptsPrefix(runName));
    const takeovers = takeoverSeconds(
      faults,
      rig.fake.calls,
      (port, at) => disturbed.owners.ownerOf(port, at),
      transcripts.map((t) => ({
        persona: t.scenario.persona.name,
        step: t.step,
        finishedAtMs: Date.parse(t.finishedAt),
      })),
    );
    for (const [n, s] of takeovers) recoveries.set(n, s);
    for (const f of faults)
      if (recoveries.has(f.fault.n))
        say(
          `fault ${f.fault.n} (${f.fault.kind}): recovery ${recoveries.get(f.fault.n)!.toFixed(1)} s (${takeovers.has(f.fault.n) ? 'from the fault until every dialogue its worker held went on' : 'from its return to the next successful LLM call'})`,
        );
    const counts = await countEveryCall(disturbed, faults, opts.dump);
    say(
      `calls: ${counts.answered} answered, ${counts.madeTwice} finished calls made twice, ${counts.superseded} made by superseded attempts, ${counts.unrecorded} answers recorded nowhere; ${counts.chainFailures} of ${counts.transcripts} transcripts do not chain`,
    );
    for (const [kind, c] of Object.entries(counts.byKind)) say(`  ${kind}: ${JSON.stringify(c)}`);
    for (const p of counts.problems.slice(0, 12)) say(`  problem: ${p}`);
    const checks = [
      ...checkInvariants({
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
        resampledFromStep: resampledFrom(transcripts),
      }),
      ...(opts.firstFinished
        ? checkStreamInvariants({
            dialoguesPerStep: rig.config.training.scenariosPerStep * samplesPerScenarioOf(rig.config.training),
            samplesPerScenario: samplesPerScenarioOf(rig.config.training),
            maxStaleness: rig.config.training.maxStaleness,
            metrics: await rig.metrics(runName),
            transcripts,
            stream: (await statusOf(rig.client.workflow.getHandle(trainingWorkflowId(runName))))?.stream ?? null,
          })
        : []),
      { name: 'no finished call made twice', ok: counts.madeTwice === 0, detail: `${counts.madeTwice}` },
      {
        name: 'every transcript chains',
        ok: counts.chainFailures === 0 && counts.transcripts >= opts.steps * ROLLOUTS_PER_STEP,
        detail: `${counts.chainFailures} of ${counts.transcripts} do not`,
      },
      { name: 'no call made by a superseded attempt', ok: counts.superseded === 0, detail: `${counts.superseded}` },
    ];
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
      mode:
        opts.set.filter((x) => x.startsWith('rollout.') || x.startsWith('training.stepDialogues')).join(' ') ||
        'default (local turns)',
      set: opts.set,
      recoverySeconds: Object.fromEntries(recoveries),
      recoveryByKind: byKind(faults, recoveries),
      // Faults whose recovery runs from the fault until every dialogue its worker held went on (the rest: from the return).
      recoveryFromTheFault: [...takeovers.keys()],
      maxRecoverySeconds: maxRecovery,
      calls: counts,
      wallS,
    });
    say(`wrote ${opts.out}`);
    if (failed.length > 0)
      return {
        code: 1,
        verdict: `chaos: ${injected} faults injected, invariants VIOLATED: ${failed.map((c) => c.name).join('; ')}; ${countLine(counts)}`,
      };
    return {
      code: 0,
      verdict: `chaos: ${injected} faults injected, invariants held; ${countLine(counts)}; max recovery ${maxRecovery.toFixed(1)} s`,
    };
  } finally {
    say('stopping every process the soak started');
    ignoreStragglers();
    await stack.close();
    rmSync(scenarioDir, { recursive: true, force: true });
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
