import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import { DevServer } from '../../src/temporal/devServer.js';
import { trainingStatusQuery, type training, type TrainingStatus } from '../../src/workflows/training.js';
import type { FakeBehaviour } from '../../test/support/fakeOpenAI.js';
import { OutageProxy } from '../../test/support/outageProxy.js';
import { TcpCutProxy } from '../../test/support/tcpCutProxy.js';
import { createTrainingRig, type TrainingRig } from '../../test/support/trainingRig.js';
import { WorkerProcess } from '../../test/support/workerProcess.js';

/** `llm2` is a second `llm` worker, reaching the Temporal frontend through a proxy that can be cut. */
export type WorkerRole = 'llm' | 'llm2' | 'optimizer';

/** Milliseconds on the clock the fake server stamps its calls with. */
export const now = (): number => performance.timeOrigin + performance.now();

/**
 * Everything a soak starts: one dev server (SQLite, so it survives a SIGKILL), the undisturbed
 * run's rig with in-process workers, and the disturbed run's rig with worker processes and a proxy
 * in front of its trainer (whose chat completions, the policy endpoint, can be taken down).
 * `close` ends every process it started, whatever state they are in.
 */
export class ChaosStack {
  readonly workers: Record<WorkerRole, WorkerProcess | null> = { llm: null, llm2: null, optimizer: null };
  /** The second LLM worker's way to the Temporal frontend (see `partition`). */
  frontendCut: TcpCutProxy | null = null;
  /** While this file exists, the next journal write after a finished call fails once (the workers' test-only switch). */
  readonly journalFaultFile: string;
  private readonly spawned: WorkerProcess[] = [];
  /** The workers' ATTUNE_LOG_LEVEL: `debug` logs each journal claim and confirmation (for `--dump`). */
  workerLogLevel: 'info' | 'debug' = 'info';
  private readonly rigs: TrainingRig[] = [];
  private proxies: OutageProxy[] = [];
  private readonly pending = new Set<Promise<unknown>>();
  private closing = false;

  private constructor(
    readonly server: DevServer,
    private readonly home: string,
  ) {
    this.journalFaultFile = join(home, 'journal-write-fails-once');
  }

  static async start(): Promise<ChaosStack> {
    const home = mkdtempSync(join(tmpdir(), 'attune-chaos-soak-'));
    const server = await DevServer.create({ home, headless: true });
    const stack = new ChaosStack(server, home);
    await server.start();
    return stack;
  }

  /** A rig on this stack's server; in-process workers are up to the caller (`rig.startWorkers()`). */
  async rig(options: {
    set: string[];
    behaviour: FakeBehaviour;
    trainerEnv?: NodeJS.ProcessEnv;
  }): Promise<TrainingRig> {
    const rig = await createTrainingRig({ server: this.server, ...options });
    this.rigs.push(rig);
    return rig;
  }

  /** A proxy whose URL goes into the rig's `trainer.url`; point it at the trainer once the rig exists. */
  async proxy(): Promise<OutageProxy> {
    const proxy = await OutageProxy.start();
    this.proxies.push(proxy);
    return proxy;
  }

  /** The process ids of every worker process started (live or not). */
  get pids(): number[] {
    return this.spawned.map((w) => w.pid).filter((pid): pid is number => pid !== undefined);
  }

  /** Every worker process started, live or not, with its output so far. */
  get workerLogs(): { pid: number | undefined; log: string }[] {
    return this.spawned.map((w) => ({ pid: w.pid, log: w.log }));
  }

  /** Starts an `attune worker --role ROLE` process for the rig and waits until it polls. */
  startWorker(rig: TrainingRig, role: WorkerRole): Promise<WorkerProcess> {
    return this.guarded(async () => {
      let address = this.server.address;
      if (role === 'llm2') {
        this.frontendCut ??= await TcpCutProxy.start(this.server.address);
        address = this.frontendCut.address;
      }
      const worker = WorkerProcess.start(
        address,
        rig.configSet,
        ['worker', '--role', role === 'optimizer' ? 'optimizer' : 'llm'],
        {
          ATTUNE_JOURNAL_FAULT_INJECTION: `fail-once-after-call:${this.journalFaultFile}`,
          ATTUNE_LOG_LEVEL: this.workerLogLevel,
        },
      );
      this.spawned.push(worker);
      this.workers[role] = worker;
      await worker.ready();
      return worker;
    });
  }

  /** SIGKILL of the role's worker process, then (after `afterKill`, with no worker of the role) a new one. */
  replaceWorker(rig: TrainingRig, role: WorkerRole, afterKill?: () => Promise<void>): Promise<WorkerProcess> {
    return this.guarded(async () => {
      await this.workers[role]?.kill('SIGKILL');
      await afterKill?.();
      return this.startWorker(rig, role);
    });
  }

  /** SIGSTOP of the role's worker for `ms`, then SIGCONT: returns when it goes on. */
  pauseWorker(role: WorkerRole, ms: number): Promise<void> {
    return this.guarded(async () => {
      const worker = this.workers[role];
      if (!worker) throw new Error(`no ${role} worker`);
      worker.signal('SIGSTOP');
      try {
        await sleep(ms);
      } finally {
        worker.signal('SIGCONT');
      }
    });
  }

  /** Cuts the second LLM worker off from the Temporal frontend for `ms` (it still reaches the LLMs and the store). */
  async partition(ms: number): Promise<void> {
    if (!this.frontendCut) throw new Error('no second LLM worker behind a frontend proxy');
    this.frontendCut.partition();
    try {
      await sleep(ms);
    } finally {
      this.frontendCut.heal();
    }
  }

  /** SIGKILL of the rig's trainer, then a restart on the same state directory and port. */
  restartTrainer(rig: TrainingRig): Promise<void> {
    return this.guarded(() => rig.trainer.restart());
  }

  /** SIGKILL of the dev server, then a restart on the same SQLite file. */
  restartServer(): Promise<void> {
    return this.guarded(async () => {
      await this.server.stop('SIGKILL');
      await this.server.start();
    });
  }

  /**
   * Runs work that starts processes; `close` waits for it first, so nothing started during the
   * clean-up outlives it, and refuses it once the clean-up has begun.
   */
  private async guarded<T>(work: () => Promise<T>): Promise<T> {
    if (this.closing) throw new Error('the soak is stopping');
    const running = work();
    this.pending.add(running);
    try {
      return await running;
    } finally {
      this.pending.delete(running);
    }
  }

  async close(): Promise<void> {
    this.closing = true;
    await Promise.race([Promise.allSettled([...this.pending]), sleep(90_000)]);
    const quietly = async (work: () => Promise<unknown>) => {
      try {
        await work();
      } catch {
        // clean-up goes on: every process gets its chance to be ended
      }
    };
    for (const worker of this.spawned) await quietly(() => worker.kill('SIGKILL'));
    for (const rig of this.rigs) await quietly(() => rig.close());
    for (const proxy of this.proxies) await quietly(() => proxy.close());
    if (this.frontendCut) await quietly(() => this.frontendCut!.close());
    await quietly(() => this.server.stop());
    rmSync(this.home, { recursive: true, force: true });
  }
}

/** The run's status, or null while the server cannot answer (it may be restarting). */
export async function statusOf(handle: WorkflowHandle<typeof training>): Promise<TrainingStatus | null> {
  try {
    return await handle.query(trainingStatusQuery);
  } catch {
    return null;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
