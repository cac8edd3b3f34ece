import type { WorkflowHandle } from '@temporalio/client';
import type { TrainingPhase, training } from '../../src/workflows/training.js';
import { CallOwners } from '../chaos/calls.js';
import type { Operator } from '../chaos/operator.js';
import { sleep, statusOf } from '../chaos/stack.js';
import { SOAK_FAULTS, type SoakFault } from './plan.js';
import { tmpDirsUnder } from './procfs.js';
import { REPLICA_NAMES, type SoakStack } from './stack.js';

/** What the injector needs of the run under way. */
export interface SoakRun {
  stack: SoakStack;
  handle: WorkflowHandle<typeof training>;
  runName: string;
  operator: Operator;
  /** Resolves when the run has ended (or the soak gave up on it). */
  ended: Promise<void>;
  /** How long the object store stays down. */
  outageMs: number;
  say(line: string): void;
}

export interface InjectedSoakFault {
  fault: SoakFault;
  injected: boolean;
  /** The step the run was at when it struck (a fault whose point had passed strikes at the next one). */
  struckAtStep: number | null;
  /** Seconds from the strike until what it struck served again (replica on the step's version, process back, store up). */
  recoverySeconds: number | null;
  /** What the fault found or did, in words (the replica struck, the temp directory the kill left, ...). */
  detail: string;
  error?: string;
}

const ENDED: unique symbol = Symbol('ended');

async function unlessEnded<T>(run: SoakRun, promise: Promise<T>): Promise<T | typeof ENDED> {
  return Promise.race([promise, run.ended.then((): typeof ENDED => ENDED)]);
}

/**
 * Resolves with the run's step once it is at `step` or later in one of `phases` (any phase when
 * none is given); null when the run ended first. A fault whose point passed strikes at the next
 * step's point, so every planned fault strikes.
 */
async function atPoint(run: SoakRun, step: number, phases: TrainingPhase[] = []): Promise<number | null> {
  let over = false;
  void run.ended.then(() => (over = true));
  while (!over) {
    const status = await statusOf(run.handle);
    if (status && status.step >= step && (phases.length === 0 || phases.includes(status.phase))) return status.step;
    await sleep(100);
  }
  return null;
}

/** Polls `done` every 250 ms until it holds (true), the run ends or `ms` pass (false). */
async function until(run: SoakRun, done: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await done().catch(() => false)) return true;
    if ((await unlessEnded(run, sleep(250))) === ENDED) return false;
  }
  return false;
}

const seconds = (fromMs: number) => Number(((Date.now() - fromMs) / 1000).toFixed(1));

/** Injects `fault` at its point and waits until what it struck is back; never throws. */
export async function injectSoakFault(run: SoakRun, fault: SoakFault, total: number): Promise<InjectedSoakFault> {
  const outcome: InjectedSoakFault = { fault, injected: false, struckAtStep: null, recoverySeconds: null, detail: '' };
  const label = `fault ${fault.n}/${total} [step ${fault.step}] ${fault.kind}`;
  try {
    await STRIKE[fault.kind](run, fault, outcome, (line) => run.say(`${label}: ${line}`));
  } catch (error) {
    outcome.error = (error as Error).message;
    run.say(`${label}: injection failed: ${outcome.error}`);
  }
  return outcome;
}

type Strike = (
  run: SoakRun,
  fault: SoakFault,
  outcome: InjectedSoakFault,
  say: (line: string) => void,
) => Promise<void>;

const STRIKE: Record<SoakFault['kind'], Strike> = {
  async 'replica-restart'(run, fault, outcome, say) {
    const replica = run.stack.replicas[fault.replica]!;
    const step = await atPoint(run, fault.step, ['rollouts']);
    if (step === null) return;
    // Mid-step: at the replica's next policy answer of this step's dialogues (or after 5 s without one).
    const answered = replica.answers().length;
    await until(run, async () => replica.answers().length > answered, 5000);
    const at = Date.now();
    await replica.restart();
    Object.assign(outcome, { injected: true, struckAtStep: step });
    say(`${SOAK_FAULTS[fault.kind].describe}: ${replica.name} restarted at step ${step}`);
    // Back when it serves the step's version again: its publisher reloaded it, within the step.
    const expected = `${run.runName}@${step - 1}`;
    const serving = (v: string) => v !== 'default' && !v.startsWith('loading');
    if (await until(run, async () => serving((await replica.state()).version), 120_000)) {
      outcome.recoverySeconds = seconds(at);
      outcome.detail = `${replica.name} restarted on its launch weights; serving ${(await replica.state()).version} again after ${outcome.recoverySeconds} s (the step samples ${expected})`;
    } else outcome.detail = `${replica.name} restarted; still on its launch weights when the run ended`;
    say(outcome.detail);
  },

  async 'resume-fails'(run, fault, outcome, say) {
    const replica = run.stack.replicas[fault.replica]!;
    const step = await atPoint(run, fault.step);
    if (step === null) return;
    const before = (await replica.state()).resumesFailed;
    // Every try of one publish's resume (src/vllm/fullWeights.ts tries 3 times) fails: vLLM stays paused.
    await replica.failResumes(3);
    say(`armed on ${replica.name} at step ${step}: its next 3 /resume calls answer 500`);
    if (!(await until(run, async () => (await replica.state()).resumesFailed >= before + 3, 600_000))) return;
    const at = Date.now();
    Object.assign(outcome, { injected: true, struckAtStep: (await statusOf(run.handle))?.step ?? step });
    say(`${replica.name}'s /resume failed 3 times: left paused`);
    if (await until(run, async () => !(await replica.isPaused()), 300_000)) {
      outcome.recoverySeconds = seconds(at);
      outcome.detail = `${replica.name} left paused by 3 failed /resume calls; resumed ${outcome.recoverySeconds} s later`;
    } else outcome.detail = `${replica.name} left paused by 3 failed /resume calls; still paused when the run ended`;
    say(outcome.detail);
  },

  async 'kill-publisher-download'(run, fault, outcome, say) {
    const { stack } = run;
    const step = await atPoint(run, fault.step);
    if (step === null) return;
    const heldPromise = stack.gate.holdNext();
    say(`armed at step ${step}: the next weights download is held`);
    const held = await unlessEnded(run, heldPromise);
    if (held === ENDED) {
      stack.gate.disarm();
      return;
    }
    // Which publisher holds the download: the process owning the connection's client port.
    const owners = new CallOwners(() => stack.publishers.flatMap((p) => (p?.pid !== undefined ? [p.pid] : [])));
    owners.note(held.remotePort);
    const index = stack.publishers.findIndex((p) => p?.pid !== undefined && p.pid === owners.lastPid);
    const i = index === -1 ? fault.replica : index;
    const tmp = tmpDirsUnder(stack.downloadDirs[i]!);
    const at = Date.now();
    await stack.publishers[i]?.kill('SIGKILL');
    held.drop();
    Object.assign(outcome, { injected: true, struckAtStep: (await statusOf(run.handle))?.step ?? step });
    say(`publisher of ${REPLICA_NAMES[i]} SIGKILLed mid-download (${held.path}); it left ${tmp.length} .tmp-* dir(s)`);
    await stack.startPublisher(i);
    outcome.recoverySeconds = seconds(at);
    outcome.detail = `publisher of ${REPLICA_NAMES[i]} killed mid-download of ${held.path}, leaving ${tmp.map((t) => t.split('/').pop()).join(', ') || 'no temp dir'}; a new one polled after ${outcome.recoverySeconds} s`;
    say(outcome.detail);
  },

  async 'kill-trainer'(run, fault, outcome, say) {
    const step = await atPoint(run, fault.step, ['optimizing']);
    if (step === null) return;
    const at = Date.now();
    await run.stack.chaos.restartTrainer(run.stack.rig);
    Object.assign(outcome, { injected: true, struckAtStep: step, recoverySeconds: seconds(at) });
    outcome.detail = `trainer SIGKILLed during step ${step}'s optimizer call; answering /health again after ${outcome.recoverySeconds} s`;
    say(outcome.detail);
  },

  async 's3-outage'(run, fault, outcome, say) {
    const { minio } = run.stack;
    const step = await atPoint(run, fault.step, ['rollouts']);
    if (step === null) return;
    const at = Date.now();
    await minio.stop();
    Object.assign(outcome, { injected: true, struckAtStep: step });
    say(`object store down at step ${step} for up to ${run.outageMs / 1000} s`);
    // Down for outageMs, or until the run waits for the operator, who brings it back first.
    let back: () => void = () => {};
    const operatorEnded = new Promise<void>((resolve) => (back = resolve));
    run.operator.outage = { name: 'object store', end: back };
    await Promise.race([sleep(run.outageMs), operatorEnded, run.ended]);
    if (run.operator.outage?.name === 'object store') run.operator.outage = null;
    await minio.start();
    outcome.recoverySeconds = seconds(at);
    outcome.detail = `MinIO down ${outcome.recoverySeconds} s during step ${step}'s dialogues, then up on the same data`;
    say(outcome.detail);
  },
};
