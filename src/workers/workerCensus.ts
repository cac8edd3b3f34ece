import type { NativeConnection } from '@temporalio/worker';
import { optionalTsToMs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import type { EndpointGates } from '../activities/index.js';
import { shareTokenRateLimits } from '../activities/tokenRateLimits.js';
import { LIMITS } from '../config/limits.js';
import { liveWorkerCount, shareOf, type PollerSeen, type ShareableLimits } from '../core/workerShare.js';
import { createLogger, type Logger } from '../log.js';

/** What the server says of the pollers of the task queue where the gated calls run. */
export type PollersOf = () => Promise<PollerSeen[]>;

/** Where the gated calls run: in the rollout workflows' tasks (local calls), or in turn activities. */
export interface CensusQueue {
  name: string;
  type: 'workflow' | 'activity';
}

/** Asks the server through the worker's own connection. */
export function pollersVia(connection: NativeConnection, namespace: string, queue: CensusQueue): PollersOf {
  const types = temporal.api.enums.v1.TaskQueueType;
  return async () => {
    const described = await connection.workflowService.describeTaskQueue({
      namespace,
      taskQueue: { name: queue.name, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: queue.type === 'workflow' ? types.TASK_QUEUE_TYPE_WORKFLOW : types.TASK_QUEUE_TYPE_ACTIVITY,
    });
    return (described.pollers ?? []).map((p) => ({
      identity: p.identity ?? '',
      lastAccessMs: optionalTsToMs(p.lastAccessTime),
    }));
  };
}

/**
 * Keeps this process's share of each endpoint's limits (`maxConcurrency`, `requestsPerSecond`,
 * `tokensPerMinute`) as worker processes come and go, where the calls pass through this process's
 * gates (local calls, turn activities): the queue they run on is described every
 * `LIMITS.workerCensusMs`, and each worker seen polling it within `LIMITS.workerLiveWindowMs` counts. A worker that joins takes its share within one census; until
 * the others see it, the endpoint may get up to (n+1)/n of a limit for that long. A failed census
 * keeps the last share.
 */
export class WorkerCensus {
  private timer: NodeJS.Timeout | null = null;
  private workers = 1;
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly self: string,
    private readonly pollersOf: PollersOf,
    private readonly gates: EndpointGates,
    private readonly configured: { policy: ShareableLimits; simulator: ShareableLimits },
    private readonly log: Logger = createLogger({ component: 'worker-census' }),
  ) {}

  /** The number of worker processes this one shares the limits with, itself included. */
  get sharedBy(): number {
    return this.workers;
  }

  /** Asks once, and takes the share it implies. */
  async count(now = Date.now()): Promise<number> {
    try {
      const pollers = await this.pollersOf();
      this.apply(liveWorkerCount(pollers, this.self, now, LIMITS.workerLiveWindowMs));
    } catch (error) {
      this.log.warn('could not count the live workers; keeping the last share of the endpoint limits', {
        workers: this.workers,
        error: error instanceof Error ? error.message : String(error),
      });
    }
    return this.workers;
  }

  private apply(workers: number): void {
    if (workers === this.workers) return;
    this.workers = workers;
    this.gates.policy.shareWith(workers);
    this.gates.simulator.shareWith(workers);
    shareTokenRateLimits(workers);
    const shares = {
      policy: shareOf(this.configured.policy, workers),
      simulator: shareOf(this.configured.simulator, workers),
    };
    this.log.info('worker processes share the endpoint limits', {
      workers,
      policy: shares.policy,
      simulator: shares.simulator,
    });
    for (const [role, share] of Object.entries(shares))
      if (share.exceeds)
        this.log.warn(
          `more workers than ${role}.maxConcurrency: each makes one call at a time, more than the limit together`,
          {
            workers,
            maxConcurrency: this.configured[role as 'policy' | 'simulator'].maxConcurrency,
          },
        );
  }

  start(): void {
    if (this.timer) return;
    const countNow = () => {
      this.pending = this.count().then(() => undefined);
    };
    countNow();
    this.timer = setInterval(countNow, LIMITS.workerCensusMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.pending;
  }
}
