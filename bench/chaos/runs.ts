import type { StepMetricsRecord } from '../../src/core/runMetrics.js';
import type { FakeBehaviour } from '../../test/support/fakeOpenAI.js';
import type { OutageProxy } from '../../test/support/outageProxy.js';
import type { TrainingRig } from '../../test/support/trainingRig.js';
import { CallOwners, type ProcessFault } from './calls.js';
import { injectFault, type InjectedFault, type SoakRun } from './inject.js';
import { Operator } from './operator.js';
import { faultSwitchSpec, type PlannedFault } from './plan.js';
import { now, type ChaosStack } from './stack.js';

/** The same config, no faults, in-process workers: the metrics every disturbed step must match. */
export async function undisturbedRun(
  stack: ChaosStack,
  set: string[],
  behaviour: FakeBehaviour,
  deadline: Promise<never>,
  say: (line: string) => void,
): Promise<StepMetricsRecord[]> {
  say('undisturbed run: starting');
  const rig = await stack.rig({ set, behaviour });
  await rig.startWorkers();
  const { handle } = await rig.start('soak-undisturbed');
  await Promise.race([handle.result(), deadline]);
  const metrics = await rig.metrics('soak-undisturbed');
  await rig.close();
  say(`undisturbed run: ${metrics.length} steps`);
  return metrics;
}

export interface DisturbedRun {
  rig: TrainingRig;
  /** The proxy in front of the policy: its log of the policy's calls. */
  proxy: OutageProxy;
  runName: string;
  stepsApplied: number | null;
  runError: string | null;
  runEndMs: number;
  /** Which worker process made each call (by its TCP port). */
  owners: CallOwners;
  processFaults: ProcessFault[];
  /** Every worker process's log, read when the run is looked at. */
  workerLogs: () => { pid: number | undefined; log: string }[];
}

/**
 * The run under faults: worker processes, a proxy in front of the trainer (its policy endpoint can
 * go down), the plan's switch faults armed in the trainer's environment, every fault a task of its
 * own waiting for its point, and the operator resuming whenever the run waits for one.
 */
export async function disturbedRun(input: {
  stack: ChaosStack;
  set: string[];
  behaviour: FakeBehaviour;
  plan: PlannedFault[];
  deadline: Promise<never>;
  say: (line: string) => void;
}): Promise<{ disturbed: DisturbedRun; faults: InjectedFault[] }> {
  const { stack, plan, say } = input;
  say('disturbed run: starting the trainer and worker processes');
  const proxy = await stack.proxy();
  const spec = faultSwitchSpec(plan);
  const rig = await stack.rig({
    set: [...input.set, `trainer.url=${proxy.url}`],
    behaviour: { ...input.behaviour },
    // A held commit gives a kill during the optimizer step time to land.
    trainerEnv: { ATTUNE_TRAINER_FAULT_DELAY_S: '1', ...(spec ? { ATTUNE_TRAINER_FAULT_INJECTION: spec } : {}) },
  });
  proxy.target = rig.trainer.url;
  const owners = new CallOwners(() => stack.pids);
  rig.fake.onArrival = (port) => owners.note(port);
  proxy.onArrival = (port) => owners.note(port);
  // Two LLM workers: when one is killed, paused or cut off, the other takes its dialogues over.
  await Promise.all([
    stack.startWorker(rig, 'llm'),
    stack.startWorker(rig, 'llm2'),
    stack.startWorker(rig, 'optimizer'),
  ]);
  const runName = 'soak-disturbed';
  const { handle } = await rig.start(runName);
  say('disturbed run: started');
  const operator = new Operator(handle, say);
  let markEnded: () => void = () => {};
  const ended = new Promise<void>((resolve) => (markEnded = resolve));
  const processFaults: ProcessFault[] = [];
  const run: SoakRun = { stack, rig, proxy, handle, operator, ended, say, total: plan.length, processFaults, owners };
  operator.start();
  // A pause or a cut lasts past a timeout while the run goes on: the rollouts' faults strike one after
  // another, so two never overlap (a later one waits, then strikes at once if its step has passed),
  // and the run is held between steps while one is under way and another is to come.
  const rollouts = plan.filter((f) => f.phase === 'rollouts');
  const inTurn = (async () => {
    const out: InjectedFault[] = [];
    for (const [i, f] of rollouts.entries()) out.push(await injectFault(run, f, i < rollouts.length - 1));
    return out;
  })();
  const injecting = Promise.all([
    inTurn,
    Promise.all(plan.filter((f) => f.phase !== 'rollouts').map((f) => injectFault(run, f))),
  ]).then(([a, b]) => [...a, ...b].sort((x, y) => x.fault.n - y.fault.n));
  let stepsApplied: number | null = null;
  let runError: string | null = null;
  try {
    stepsApplied = (await Promise.race([handle.result(), input.deadline])).stepsApplied;
  } catch (error) {
    runError = (error as Error).message;
  }
  const runEndMs = now();
  // The fault tasks and the operator stop waiting for points the run will no longer reach.
  markEnded();
  await operator.stop();
  const faults = await injecting;
  say(`disturbed run: ${runError ?? `ended, ${stepsApplied} steps applied`}; operator resumed ${operator.resumes}x`);
  return {
    disturbed: {
      rig,
      proxy,
      runName,
      stepsApplied,
      runError,
      runEndMs,
      owners,
      processFaults,
      workerLogs: () => stack.workerLogs,
    },
    faults,
  };
}
