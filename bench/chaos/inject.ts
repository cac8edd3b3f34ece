import type { WorkflowHandle } from '@temporalio/client';
import type { training } from '../../src/workflows/training.js';
import type { OutageProxy } from '../../test/support/outageProxy.js';
import type { TrainingRig } from '../../test/support/trainingRig.js';
import type { Operator } from './operator.js';
import { FAULT_KINDS, SWITCH_POINTS, type PlannedFault } from './plan.js';
import { now, sleep, statusOf, type ChaosStack } from './stack.js';

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
}

export interface InjectedFault {
  fault: PlannedFault;
  injected: boolean;
  /** When the killed process, or the endpoint, was back (fake-server clock); null for switch faults. */
  backAtMs: number | null;
  /** A killed process: what "max recovery" is measured over. */
  killed: boolean;
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
async function duringRollouts(run: SoakRun, step: number): Promise<boolean> {
  let ended = false;
  void run.ended.then(() => (ended = true));
  for (;;) {
    if (ended) return false;
    const status = await statusOf(run.handle);
    if (status && status.step >= step) {
      const early = ['starting', 'rollouts', 'paused', 'waiting-for-operator'].includes(status.phase);
      if (status.step === step && early) {
        const fake = run.rig.fake;
        const next = fake.waitForCall('analysis', fake.count('analysis') + 1);
        return (await unlessEnded(run, Promise.race([next, sleep(60_000)]))) !== ENDED;
      }
      return true;
    }
    await sleep(150);
  }
}

/** `"step": N` in the trainer's JSON log lines, and not N0, N1, ... */
const stepField = (step: number) => `"step": ${step}[,}]`;

/**
 * Injects one planned fault at a point it can reach, and brings back what it took down. Triggers
 * are set up at once (before the run gets there); the plan puts at most one fault in each phase
 * of a step, and a step cannot go on without what the fault took down, so faults never overlap.
 */
export async function injectFault(run: SoakRun, fault: PlannedFault): Promise<InjectedFault> {
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
    } else if (!(await duringRollouts(run, fault.step))) {
      return outcome;
    }
    outcome.injected = true;
    run.say(label);
    switch (fault.kind) {
      case 'kill-llm-worker':
      case 'kill-optimizer-worker':
        outcome.killed = true;
        await stack.replaceWorker(rig, fault.kind === 'kill-llm-worker' ? 'llm' : 'optimizer');
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
