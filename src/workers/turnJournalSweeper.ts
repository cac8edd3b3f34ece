import type { NativeConnection, Worker } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import type { ArtifactStore } from '../artifacts/store.js';
import { journalledRuns, turnJournalRunPrefix, type JournalledRun } from '../activities/turnJournal.js';
import { LIMITS } from '../config/limits.js';
import { createLogger, type Logger } from '../log.js';

/** Whether a workflow run is closed: no worker will play its turns again, so its journal can go. */
export type RunClosed = (run: JournalledRun) => Promise<boolean>;

/**
 * Removes the turn journals of closed rollouts (src/activities/turnJournal.ts). A journal may go
 * only once its run is closed: until then a worker that takes the workflow over replays the turns
 * not yet in the history from it. The rollout's own code cannot know that moment (its last turns'
 * markers reach the history with its completion), so the worker removes the journal afterwards:
 * - `afterClose`: the rollout's last activity says its run is ending; the run is asked for at
 *   growing intervals until it is closed, then its journal goes (one describe call, most often);
 * - `sweep`: every journal in the store, for runs that failed, were terminated or whose worker died
 *   (at start and every `LIMITS.turnJournalSweepMs`).
 * Neither is on a rollout's path, so a dialogue ends without a queued activity for its journal.
 */
export class TurnJournalSweeper {
  private readonly pending = new Set<Promise<void>>();
  private readonly waits = new Set<() => void>();
  private periodic: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly store: ArtifactStore,
    private readonly closed: RunClosed,
    private readonly log: Logger = createLogger({ component: 'turn-journal-sweeper' }),
  ) {}

  /**
   * Removes `run`'s journal once the run is closed, asking at doubling intervals from
   * `LIMITS.turnJournalFirstCheckMs` for at most `LIMITS.turnJournalCloseWaitMs` (then the periodic
   * sweep takes it). Resolves to whether the journal went (false also when there was none).
   */
  afterClose(run: JournalledRun): Promise<boolean> {
    // Resolves, never rejects: every failure is logged or counted as "not yet".
    const work = (async () => {
      // Rollouts without local turns have no journal: no need to ask the server about them.
      if ((await this.store.list(turnJournalRunPrefix(run)).catch(() => ['unknown'])).length === 0) return false;
      const deadline = Date.now() + LIMITS.turnJournalCloseWaitMs;
      for (let delayMs = LIMITS.turnJournalFirstCheckMs; !this.stopped; delayMs *= 2) {
        if (!(await this.pause(delayMs))) return false;
        if (await this.removeIfClosed(run)) return true;
        if (Date.now() + delayMs * 2 > deadline) return false;
      }
      return false;
    })();
    this.track(work.then(() => undefined));
    return work;
  }

  /** Waits `ms`; false when the sweeper stopped meanwhile. */
  private pause(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.waits.delete(wake);
        resolve(!this.stopped);
      }, ms);
      timer.unref();
      const wake = () => {
        clearTimeout(timer);
        resolve(false);
      };
      this.waits.add(wake);
    });
  }

  /** Every journal in the store: those of closed runs go. */
  async sweep(): Promise<{ removed: number; kept: number }> {
    const runs = journalledRuns(await this.store.list('journals/'));
    let removed = 0;
    for (const run of runs) if (await this.removeIfClosed(run)) removed++;
    return { removed, kept: runs.length - removed };
  }

  start(): void {
    if (this.periodic) return;
    this.stopped = false;
    const sweepNow = () =>
      this.track(
        this.sweep().then(
          ({ removed, kept }) => {
            if (removed > 0) this.log.info('removed the turn journals of closed rollouts', { removed, kept });
          },
          () => undefined,
        ),
      );
    sweepNow();
    this.periodic = setInterval(sweepNow, LIMITS.turnJournalSweepMs);
    this.periodic.unref();
  }

  /**
   * Stops checking, and waits for the checks in flight for at most `LIMITS.turnJournalStopWaitMs`:
   * a store that hangs (an S3 outage) must not hold up the worker's shutdown, and a removal cut
   * short is done again by the next sweep.
   */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.periodic) clearInterval(this.periodic);
    this.periodic = null;
    for (const wake of this.waits) wake();
    this.waits.clear();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.pending]),
      new Promise((resolve) => (timer = setTimeout(resolve, LIMITS.turnJournalStopWaitMs))),
    ]);
    clearTimeout(timer);
  }

  /** True when the run is closed and its journal is gone; a failure to ask or to remove is logged and leaves it. */
  private async removeIfClosed(run: JournalledRun): Promise<boolean> {
    const prefix = turnJournalRunPrefix(run);
    try {
      if (!(await this.closed(run))) return false;
      await this.store.remove(prefix);
      return true;
    } catch (error) {
      this.log.warn('could not remove a turn journal; the next sweep tries again', {
        journal: this.store.locate(prefix.replace(/\/$/, '')),
        error: error instanceof Error ? error.message : String(error),
      });
      return false;
    }
  }

  private track(work: Promise<void>): void {
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }
}

const RUNNING = temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING;
const GRPC_NOT_FOUND = 5;

/**
 * Asks the server through the worker's own connection. A run the server does not know counts as
 * open: it may be another namespace's or another cluster's that shares the store, and a journal
 * left over costs a few kB, while one removed under a running dialogue repeats its calls.
 */
export function runClosedVia(connection: NativeConnection, namespace: string): RunClosed {
  return async ({ workflowId, runId }) => {
    try {
      const described = await connection.workflowService.describeWorkflowExecution({
        namespace,
        execution: { workflowId, runId },
      });
      return described.workflowExecutionInfo?.status !== RUNNING;
    } catch (error) {
      if ((error as { code?: number }).code === GRPC_NOT_FOUND) return false;
      throw error;
    }
  };
}

/** The sweeper runs while `worker` does: started by its `run`, stopped when that returns. */
export function sweepWhileRunning(worker: Worker, sweeper: TurnJournalSweeper): Worker {
  const run = worker.run.bind(worker);
  worker.run = async () => {
    sweeper.start();
    try {
      return await run();
    } finally {
      await sweeper.stop();
    }
  };
  return worker;
}
