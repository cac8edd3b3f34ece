import type { WorkflowHandle } from '@temporalio/client';
import type { training } from '../../src/workflows/training.js';
import { existsSync, writeFileSync } from 'node:fs';
import type { OutageProxy } from '../../test/support/outageProxy.js';
import type { CallRole } from '../../test/support/fakeOpenAI.js';
import { LIMITS } from '../../src/config/limits.js';
import { isTurnRecordKey } from '../../src/journal/turnJournalKeys.js';
import { rolloutWorkflowTaskTimeoutMs } from '../../src/config/rolloutSettingsFromConfig.js';
import type { CallOwners, ProcessFault } from './calls.js';
import type { TrainingRig } from '../../test/support/trainingRig.js';
import type { Operator } from './operator.js';
import { FAULT_KINDS, SWITCH_POINTS, type PlannedFault } from './plan.js';
import { now, sleep, statusOf, type ChaosStack } from './stack.js';
import { TEMPORAL_DEFAULT_WORKFLOW_TASK_TIMEOUT_MS } from '../../src/core/requestCheckLease.js';

export interface SoakRun {
  stack: ChaosStack;
  rig: TrainingRig;
  proxy: OutageProxy;
  handle: WorkflowHandle<typeof training>;
  operator: Operator;
  /** Resolves when the run has ended (or the soak gave up on it). */
  ended: Promise<void>;
  say(line: string): void;
  total: number;
  /** Windows in which a worker process's answered calls may be made again by whoever takes over. */
  processFaults: ProcessFault[];
  /** Which worker process made each call. */
  owners: CallOwners;
}

export interface InjectedFault {
  fault: PlannedFault;
  injected: boolean;
  /** When the killed process, or the endpoint, was back (fake-server clock); null for switch faults. */
  backAtMs: number | null;
  /** A killed process: what "max recovery" is measured over. */
  killed: boolean;
  /** When the fault struck (kill, SIGSTOP, cut, failed write), and the worker process it struck. */
  atMs?: number;
  pid?: number;
  error?: string;
}

const ENDED: unique symbol = Symbol('ended');

/** Waits for `promise`, or for the run's end (then ENDED). */
async function unlessEnded<T>(run: SoakRun, promise: Promise<T>): Promise<T | typeof ENDED> {
  return Promise.race([promise, run.ended.then((): typeof ENDED => ENDED)]);
}

/**
 * Resolves during the step's dialogues: once the run is at `step`, at the next simulator analysis
 * call (the middle of a dialogue). A run already past that point gets the fault at once.
 */
async function duringRollouts(
  run: SoakRun,
  step: number,
  role: CallRole = 'analysis',
  byPid: () => number | undefined = () => undefined,
): Promise<boolean> {
  let ended = false;
  void run.ended.then(() => (ended = true));
  // The openings come first in a step, and a late status would miss them: arm from the step before.
  if (role === 'opening') return atOpenings(run, step, () => ended);
  for (;;) {
    if (ended) return false;
    const status = await statusOf(run.handle);
    if (status && status.step >= step) {
      const early = ['starting', 'rollouts', 'paused', 'waiting-for-operator'];
      if (status.step === step && early.includes(status.phase)) {
        const fake = run.rig.fake;
        // A call of `role` (made by the worker `byPid` names, when it names one).
        for (let tries = 0; ; tries++) {
          const next = fake.waitForCall(role, fake.count(role) + 1);
          if ((await unlessEnded(run, Promise.race([next, sleep(60_000)]))) === ENDED) return false;
          const pid = byPid();
          if (pid === undefined || run.owners.lastPid === pid || tries >= 20) return true;
          // Not past the step's dialogues: strike there even if that worker made none of its calls.
          const now = await statusOf(run.handle);
          if (now && (now.step !== step || !early.includes(now.phase))) return true;
        }
      }
      return true;
    }
    await sleep(150);
  }
}

/**
 * How long a paused or cut-off worker stays so: past the rollouts' workflow-task timeout (local turns)
 * or the turn activities' heartbeat timeout (one activity per turn or call), whichever is longer.
 */
function pastTimeoutsMs(run: SoakRun): number {
  const wft = rolloutWorkflowTaskTimeoutMs(run.rig.config.rollout) ?? TEMPORAL_DEFAULT_WORKFLOW_TASK_TIMEOUT_MS;
  return Math.max(wft, LIMITS.turnHeartbeatTimeoutMs, LIMITS.llmCallHeartbeatTimeoutMs) + 5_000;
}

/** A zombie's calls after its fault may be repeated by whoever took over, until it finds itself superseded. */
const ZOMBIE_GRACE_MS = 10_000;
/** A killed or paused worker may have had an answer just before the fault that it could not journal yet. */
const IN_FLIGHT_MS = 250;
/**
 * A killed worker's answers in this long before the kill are excused from "made twice" unless its
 * journal held them at the kill (a loaded machine can take longer than IN_FLIGHT_MS to journal one).
 */
const KILL_LOOKBACK_MS = 5_000;

/** Every answer (a call's raw text) the turn journals in the rig's store hold now. */
async function journalledAnswers(rig: TrainingRig): Promise<Set<string>> {
  const out = new Set<string>();
  const collect = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(collect);
    else if (value !== null && typeof value === 'object')
      for (const [key, item] of Object.entries(value)) {
        if ((key === 'raw' || key === 'text') && typeof item === 'string') out.add(item);
        else collect(item);
      }
  };
  for (const key of (await rig.store.list('journals/')).filter(isTurnRecordKey)) {
    const text = await rig.store.getText(key).catch(() => null);
    try {
      if (text !== null) collect((JSON.parse(text) as { finished?: unknown }).finished);
    } catch {
      // not a record (yet): it holds nothing finished
    }
  }
  return out;
}

/** Resolves before the step's dialogues start (once the step before has left its own); false if the run ended first. */
async function beforeDialoguesOf(run: SoakRun, step: number): Promise<boolean> {
  const early = ['starting', 'rollouts', 'paused', 'waiting-for-operator'];
  for (;;) {
    const status = await statusOf(run.handle);
    if (status && (status.step >= step || (status.step === step - 1 && !early.includes(status.phase)))) return true;
    if ((await unlessEnded(run, sleep(150))) === ENDED) return false;
  }
}

/**
 * The sampling simulator: on from the step's start (its dialogues' first calls) until its rollouts
 * end, and the fault strikes at the step's first reply call (the LLM worker is SIGKILLed there).
 */
async function samplingFrom(run: SoakRun, step: number): Promise<boolean> {
  const fake = run.rig.fake;
  if (!(await beforeDialoguesOf(run, step))) return false;
  fake.behaviour = { ...fake.behaviour, samples: true };
  void (async () => {
    for (;;) {
      const status = await statusOf(run.handle);
      const over =
        status &&
        (status.step > step ||
          (status.step === step && !['starting', 'rollouts', 'paused', 'waiting-for-operator'].includes(status.phase)));
      if (over || (await unlessEnded(run, sleep(250))) === ENDED) break;
    }
    fake.behaviour = { ...fake.behaviour, samples: false };
  })();
  return duringRollouts(run, step, 'analysis');
}

/** The LLM worker that made the call the fault waited for (the first one when it is not known). */
function callerRole(run: SoakRun): 'llm' | 'llm2' {
  return run.owners.lastPid !== null && run.owners.lastPid === run.stack.workers.llm2?.pid ? 'llm2' : 'llm';
}

/** The new kinds: true when `fault` was one of them (and is now over). */
async function injectNew(run: SoakRun, fault: PlannedFault, outcome: InjectedFault): Promise<boolean> {
  const { rig, stack } = run;
  const window = (pid: number | undefined, fromMs: number, toMs: number) => {
    if (pid !== undefined) run.processFaults.push({ n: fault.n, kind: fault.kind, pid, fromMs, toMs });
  };
  switch (fault.kind) {
    case 'kill-llm-worker':
    case 'kill-llm-worker-opening':
    case 'sampling-simulator': {
      const role = callerRole(run);
      outcome.killed = true;
      outcome.pid = stack.workers[role]?.pid;
      outcome.atMs = now();
      const at = outcome.atMs;
      await stack.replaceWorker(rig, role, async () => {
        // What the killed worker's journals hold decides which of its answers had finished.
        const journalled = await journalledAnswers(rig);
        if (outcome.pid !== undefined)
          run.processFaults.push({
            n: fault.n,
            kind: fault.kind,
            pid: outcome.pid,
            fromMs: at - KILL_LOOKBACK_MS,
            toMs: at + IN_FLIGHT_MS,
            journalled,
          });
      });
      return true;
    }
    case 'stop-llm-worker': {
      const role = callerRole(run);
      outcome.killed = true;
      outcome.pid = stack.workers[role]?.pid;
      outcome.atMs = now();
      await stack.pauseWorker(role, pastTimeoutsMs(run));
      window(outcome.pid, outcome.atMs - IN_FLIGHT_MS, now() + ZOMBIE_GRACE_MS);
      return true;
    }
    case 'partition-llm-worker': {
      outcome.killed = true;
      outcome.pid = stack.workers.llm2?.pid;
      outcome.atMs = now();
      await stack.partition(pastTimeoutsMs(run));
      window(outcome.pid, outcome.atMs - IN_FLIGHT_MS, now() + ZOMBIE_GRACE_MS);
      if (!stack.workers.llm2?.running) await stack.startWorker(rig, 'llm2');
      return true;
    }
    case 'journal-write-fails': {
      writeFileSync(stack.journalFaultFile, '');
      while (existsSync(stack.journalFaultFile))
        if ((await unlessEnded(run, sleep(50))) === ENDED) {
          outcome.injected = false;
          return true;
        }
      outcome.atMs = now();
      run.say(`fault ${fault.n}/${run.total}: a journal write failed`);
      return true;
    }
    default:
      return false;
  }
}

/** Resolves at the step's first opening call: the next one once the step before left its dialogues. */
async function atOpenings(run: SoakRun, step: number, ended: () => boolean): Promise<boolean> {
  const early = ['starting', 'rollouts', 'paused', 'waiting-for-operator'];
  for (;;) {
    if (ended()) return false;
    const status = await statusOf(run.handle);
    if (status && status.step > step) return true;
    if (step === 1 || (status && (status.step === step || (status.step === step - 1 && !early.includes(status.phase)))))
      break;
    await sleep(100);
  }
  const fake = run.rig.fake;
  const next = fake.waitForCall('opening', fake.count('opening') + 1);
  return (await unlessEnded(run, Promise.race([next, sleep(60_000)]))) !== ENDED;
}

/** `"step": N` in the trainer's JSON log lines, and not N0, N1, ... */
const stepField = (step: number) => `"step": ${step}[,}]`;

/**
 * Injects one planned fault at a point it can reach, and brings back what it took down. Triggers
 * are set up at once (before the run gets there); the plan puts at most one fault in each phase
 * of a step, and a step cannot go on without what the fault took down, so faults never overlap.
 */
/**
 * Faults that may outlast a step while the run goes on (a pause or a cut past a timeout, a restart):
 * the soak holds the run between steps while one is under way and a later rollouts fault is still to
 * come, so that the run cannot end before the later one strikes. Not an outage (the run waits for the
 * operator anyway), nor a failed journal write: armed before its step's dialogues, it is over once it
 * fires, and a hold would keep those dialogues from starting.
 */
const HELD_KINDS = new Set<string>(
  Object.keys(FAULT_KINDS).filter(
    (k) =>
      FAULT_KINDS[k as keyof typeof FAULT_KINDS].phase === 'rollouts' &&
      !k.endsWith('-outage') &&
      k !== 'journal-write-fails',
  ),
);

/** Sends `update` to the run until it is taken (the dev server may be restarting); false once the run has ended. */
async function updateRun(run: SoakRun, update: 'pause' | 'resume'): Promise<boolean> {
  for (;;) {
    try {
      await run.handle.executeUpdate(update);
      return true;
    } catch {
      if ((await unlessEnded(run, sleep(500))) === ENDED) return false;
    }
  }
}

/**
 * Injects `fault`; with `holdRun`, a fault of a held kind pauses the run (between steps, as an
 * operator's `attune pause` does) from its strike until what it took down is back.
 */
export async function injectFault(run: SoakRun, fault: PlannedFault, holdRun = false): Promise<InjectedFault> {
  if (!holdRun || !HELD_KINDS.has(fault.kind)) return injectOne(run, fault, async () => {});
  let held = false;
  const outcome = await injectOne(run, fault, async () => {
    held = await updateRun(run, 'pause');
    if (held) run.say(`fault ${fault.n}/${run.total}: the run is held between steps until this fault is over`);
  });
  if (held && (await updateRun(run, 'resume'))) run.say(`fault ${fault.n}/${run.total}: the run goes on`);
  return outcome;
}

async function injectOne(run: SoakRun, fault: PlannedFault, struck: () => Promise<void>): Promise<InjectedFault> {
  const { rig, stack } = run;
  const label = `fault ${fault.n}/${run.total} [step ${fault.step}, ${fault.phase}] ${fault.kind}: ${FAULT_KINDS[fault.kind].describe}`;
  const outcome: InjectedFault = { fault, injected: false, backAtMs: null, killed: false };
  // Set up before anything can happen: the trainer's log is watched from now on.
  const commitHeld = rig.trainer.waitForLog(new RegExp(`"fault delay before commit".*${stepField(fault.step)}`));
  const point = SWITCH_POINTS[fault.kind];
  const switchFired = point
    ? rig.trainer.waitForLog(new RegExp(`"injected fault".*"point": "${point}".*${stepField(fault.step)}`))
    : null;
  try {
    if (switchFired) {
      // Armed in the trainer's environment from its start; injected when the step gets there.
      if ((await unlessEnded(run, switchFired)) === ENDED) return outcome;
      outcome.injected = true;
      run.say(`${label}: fired`);
      return outcome;
    }
    if (fault.phase === 'optimizer') {
      if ((await unlessEnded(run, commitHeld)) === ENDED) return outcome;
    } else if (fault.kind === 'sampling-simulator') {
      if (!(await samplingFrom(run, fault.step))) return outcome;
    } else if (fault.kind === 'journal-write-fails') {
      // Armed before the step's dialogues: the first journal write after a call of theirs fails.
      if (!(await beforeDialoguesOf(run, fault.step))) return outcome;
    } else if (
      !(await duringRollouts(run, fault.step, fault.kind === 'kill-llm-worker-opening' ? 'opening' : 'analysis'))
    ) {
      return outcome;
    }
    outcome.injected = true;
    run.say(label);
    await struck();
    if (await injectNew(run, fault, outcome)) {
      outcome.backAtMs ??= now();
      run.say(`fault ${fault.n}/${run.total}: ${outcome.killed ? 'process' : 'endpoint'} back`);
      return outcome;
    }
    switch (fault.kind) {
      case 'kill-optimizer-worker':
        outcome.killed = true;
        await stack.replaceWorker(rig, 'optimizer');
        break;
      case 'kill-trainer':
        outcome.killed = true;
        await stack.restartTrainer(rig);
        break;
      case 'kill-dev-server':
        outcome.killed = true;
        await stack.restartServer();
        break;
      case 'policy-outage':
      case 'simulator-outage': {
        const policy = fault.kind === 'policy-outage';
        let back: () => void = () => {};
        const ended = new Promise<void>((resolve) => (back = resolve));
        if (policy) run.proxy.down = true;
        else rig.fake.behaviour = { ...rig.fake.behaviour, fault: () => '500' };
        run.operator.outage = {
          name: policy ? 'policy endpoint' : 'simulator endpoint',
          end: () => {
            if (policy) run.proxy.down = false;
            else rig.fake.behaviour = { ...rig.fake.behaviour, fault: undefined };
            back();
          },
        };
        // Down until the run waits for the operator (who brings it back) or the run ends.
        await unlessEnded(run, ended);
        break;
      }
      default:
        throw new Error(`no injection for ${fault.kind}`);
    }
    outcome.backAtMs = now();
    run.say(`fault ${fault.n}/${run.total}: ${outcome.killed ? 'process' : 'endpoint'} back`);
    return outcome;
  } catch (error) {
    outcome.error = (error as Error).message;
    run.say(`fault ${fault.n}/${run.total}: injection failed: ${outcome.error}`);
    return outcome;
  }
}
