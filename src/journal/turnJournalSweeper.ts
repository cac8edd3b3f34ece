import type { NativeConnection } from '@temporalio/worker';
import { temporal } from '@temporalio/proto';
import type { ArtifactStore } from '../artifacts/store.js';
import {
  closedJournalRuns,
  journalledRuns,
  turnJournalClosedKey,
  turnJournalRunPrefix,
  type JournalledRun,
} from './turnJournalKeys.js';
import { LIMITS } from '../config/limits.js';
import { createLogger, type Logger } from '../log.js';

/**
 * What the server says of a journalled run: `closed` (no worker will play its turns again, so its
 * journal can go), `open` (running, paused, or an answer that says nothing), or `unknown` (the server
 * has no such run: past its retention, a dev server restarted, or another namespace's).
 */
export type RunState = 'open' | 'closed' | 'unknown';
export type RunStateOf = (run: JournalledRun) => Promise<RunState>;

/** The marker a sweep leaves beside a journal whose run the server does not know: when it first found it so. */
export const unknownSinceKey = (run: JournalledRun) => `${turnJournalRunPrefix(run)}unknown-since.json`;

/**
 * Removes the turn journals of closed rollouts (src/journal/turnJournal.ts). A journal may go
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
  /** Runs whose last activity said they are ending and whose journal is not gone yet. */
  private readonly ending = new Map<string, JournalledRun>();
  private readonly waits = new Set<() => void>();
  private periodic: NodeJS.Timeout | null = null;
  private stopped = false;

  constructor(
    private readonly store: ArtifactStore,
    private readonly stateOf: RunStateOf,
    private readonly log: Logger = createLogger({ component: 'turn-journal-sweeper' }),
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * Removes `run`'s journal once the run is closed, asking at doubling intervals from
   * `LIMITS.turnJournalFirstCheckMs` for at most `LIMITS.turnJournalCloseWaitMs` (then the periodic
   * sweep takes it). Resolves to whether the journal went (false also when there was none).
   */
  afterClose(run: JournalledRun): Promise<boolean> {
    // Resolves, never rejects: every failure is logged or counted as "not yet".
    const key = turnJournalRunPrefix(run);
    this.ending.set(key, run);
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
    })().finally(() => this.ending.delete(key));
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

  /**
   * Every journal in the store: those of closed runs go; closed markers go once they are old enough.
   * Past `until` (a Date.now() time) it asks about no more runs: a stopping worker's last pass ends there.
   */
  async sweep(until = Infinity): Promise<{ removed: number; kept: number }> {
    const keys = await this.store.list('journals/');
    const runs = journalledRuns(keys);
    let removed = 0;
    for (const run of runs) {
      if (Date.now() > until) return { removed, kept: runs.length - removed };
      if (await this.removeIfClosed(run)) removed++;
    }
    for (const run of closedJournalRuns(keys)) await this.removeMarkerIfOld(run);
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
   * Stops checking, after one last look: first at the runs that said they were ending, then a sweep of
   * the store (runs that failed meanwhile), both within the wait below. The last dialogues of a command
   * that stops its workers next (`npm run demo`, `attune eval`) are closed by then, and no sweep of
   * this worker would come for them (the next periodic one is 10 minutes on). Waits for the checks in
   * flight for at most `LIMITS.turnJournalStopWaitMs`: a store that hangs (an S3 outage) must not hold
   * up the worker's shutdown, and a removal cut short is done again by the next sweep.
   */
  async stop(): Promise<void> {
    const lastLook = [...this.ending.values()];
    this.stopped = true;
    if (this.periodic) clearInterval(this.periodic);
    this.periodic = null;
    for (const wake of this.waits) wake();
    this.waits.clear();
    const until = Date.now() + LIMITS.turnJournalStopWaitMs;
    this.track(
      Promise.all(lastLook.map((run) => this.removeIfClosed(run)))
        .then(() => this.sweep(until))
        .then(
          () => undefined,
          () => undefined,
        ),
    );
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.all([...this.pending]),
      new Promise((resolve) => (timer = setTimeout(resolve, LIMITS.turnJournalStopWaitMs))),
    ]);
    clearTimeout(timer);
  }

  /**
   * True when the run is closed (or unknown to the server for `LIMITS.turnJournalUnknownKeepMs`) and its
   * journal is gone; a failure to ask or to remove is logged and leaves it.
   */
  private async removeIfClosed(run: JournalledRun): Promise<boolean> {
    const prefix = turnJournalRunPrefix(run);
    try {
      const state = await this.stateOf(run);
      if (state === 'open' || (state === 'unknown' && !(await this.unknownLongEnough(run)))) return false;
      // The marker first: a zombie attempt that finds its turn's record gone finds the marker instead.
      await this.store.putJson(turnJournalClosedKey(run), { closedAt: this.now() });
      const closedKey = turnJournalClosedKey(run);
      for (const key of await this.store.list(prefix)) if (key !== closedKey) await this.store.remove(key);
      return true;
    } catch (error) {
      this.log.warn('could not remove a turn journal; the next sweep tries again', {
        journal: this.store.locate(prefix.replace(/\/$/, '')),
        error: error instanceof Error ? error.message : String(error),
      });
      return false;
    }
  }

  /**
   * A run the server does not know keeps its journal for a while: another namespace or cluster may share
   * the store, and a journal removed under a running dialogue repeats its calls. The first sweep that finds
   * it so marks the time in the store (so a restarted worker does not start the wait again); once that is
   * `LIMITS.turnJournalUnknownKeepMs` ago, far longer than a dialogue lasts, the journal goes.
   */
  private async unknownLongEnough(run: JournalledRun): Promise<boolean> {
    const marker = unknownSinceKey(run);
    const text = await this.store.getText(marker);
    const since = text === null ? null : Number((JSON.parse(text) as { since?: unknown }).since);
    if (since === null || !Number.isFinite(since)) {
      await this.store.putJson(marker, { since: this.now() });
      return false;
    }
    if (this.now() - since < LIMITS.turnJournalUnknownKeepMs) return false;
    this.log.info('removing the turn journal of a run the server has not known for a long time', {
      journal: this.store.locate(turnJournalRunPrefix(run).replace(/\/$/, '')),
      unknownSince: new Date(since).toISOString(),
    });
    return true;
  }

  /** A closed marker goes `LIMITS.turnJournalClosedKeepMs` after its journal did (with whatever is left beside it). */
  private async removeMarkerIfOld(run: JournalledRun): Promise<void> {
    try {
      const text = await this.store.getText(turnJournalClosedKey(run));
      const closedAt = text === null ? NaN : Number((JSON.parse(text) as { closedAt?: unknown }).closedAt);
      if (Number.isFinite(closedAt) && this.now() - closedAt < LIMITS.turnJournalClosedKeepMs) return;
      await this.store.remove(turnJournalRunPrefix(run));
    } catch (error) {
      this.log.warn('could not remove a closed turn journal marker; the next sweep tries again', {
        marker: this.store.locate(turnJournalClosedKey(run)),
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }

  private track(work: Promise<void>): void {
    this.pending.add(work);
    void work.finally(() => this.pending.delete(work));
  }
}

const STATUS = temporal.api.enums.v1.WorkflowExecutionStatus;
/** The statuses after which no worker plays the run's turns again. */
const CLOSED_STATUSES = new Set<number>([
  STATUS.WORKFLOW_EXECUTION_STATUS_COMPLETED,
  STATUS.WORKFLOW_EXECUTION_STATUS_FAILED,
  STATUS.WORKFLOW_EXECUTION_STATUS_CANCELED,
  STATUS.WORKFLOW_EXECUTION_STATUS_TERMINATED,
  STATUS.WORKFLOW_EXECUTION_STATUS_CONTINUED_AS_NEW,
  STATUS.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
]);
const GRPC_NOT_FOUND = 5;

/**
 * A described run's state: closed only for a status that says so. Running, paused, unspecified or no
 * execution info at all count as open: a journal removed under a live dialogue repeats its calls.
 */
export function runStateOfStatus(status: number | null | undefined): Exclude<RunState, 'unknown'> {
  return status !== null && status !== undefined && CLOSED_STATUSES.has(status) ? 'closed' : 'open';
}

/** Asks the server through the worker's own connection; a run it does not know is `unknown`. */
export function runStateVia(connection: NativeConnection, namespace: string): RunStateOf {
  return async ({ workflowId, runId }) => {
    try {
      const described = await connection.workflowService.describeWorkflowExecution({
        namespace,
        execution: { workflowId, runId },
      });
      return runStateOfStatus(described.workflowExecutionInfo?.status);
    } catch (error) {
      if ((error as { code?: number }).code === GRPC_NOT_FOUND) return 'unknown';
      throw error;
    }
  };
}
