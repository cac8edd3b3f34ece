/** Timeouts and concurrency limits of workers and activities, in one place. */
export const LIMITS = {
  /** Workflow tasks handled at once by one rollout worker. */
  maxConcurrentWorkflowTasks: 64,
  /**
   * Share of the rollout worker's workflow-task polls that take new workflows (the rest take tasks
   * of cached ones) when LLM calls are local activities. Those workflows have few tasks after their
   * first, so more pollers on the start side pick up a burst of new rollouts sooner. The SDK's
   * default is 0.2.
   */
  localCallsNonStickyPollRatio: 1,
  /** Cached workflow executions per worker (sticky cache). */
  maxCachedWorkflows: 2000,
  /** Artifact writes at once. */
  maxConcurrentArtifactActivities: 32,
  /** Time a stopping worker gives in-flight activities to finish before handing them back. */
  shutdownGraceTimeMs: 30_000,
  /** A stopping optimizer worker waits this long for a step in progress. */
  optimizerShutdownGraceTimeMs: 10 * 60_000,
  /**
   * Workflow-task timeout of rollouts with local LLM calls (unless `rollout.workflowTaskTimeoutMs`
   * says otherwise). Their workflow task stays open while the calls run, and the worker must report
   * back at 80 % of the timeout; with Temporal's 10 s an overloaded worker misses that, and the
   * calls not yet recorded run again. Finished calls are journalled and a stale attempt is fenced
   * (src/journal/turnJournal.ts), so a takeover repeats none: 20 s lets a dead worker's dialogues
   * go on as soon as the per-call mode's 20 s heartbeat timeout does (the chaos soak measures both).
   */
  localCallsWorkflowTaskTimeoutMs: 20_000,
  /**
   * How many times in a row a local turn's request may find its check older than its lease
   * (src/core/requestCheckLease.ts) as it is about to leave before the call fails: an event loop that
   * stalls that long that often is a worker in trouble, not a race.
   */
  requestCheckTries: 5,
  /**
   * Bound on an LLM call's activity, waits included: for its endpoint's slot (`rollout.llmCalls:
   * local`) and for the endpoint's `tokensPerMinute` budget. The HTTP timeout bounds the call itself;
   * a queued call's heartbeat notices a dead worker.
   */
  llmCallTimeoutMs: 30 * 60_000,
  /**
   * Turn journals of closed rollouts (src/journal/turnJournalSweeper.ts): a rollout's journal is
   * first looked at this long after its last activity, then at doubling intervals for at most
   * `turnJournalCloseWaitMs`; every journal in the store is looked at when a worker starts and every
   * `turnJournalSweepMs` (runs that failed or whose worker died).
   */
  turnJournalFirstCheckMs: 250,
  turnJournalCloseWaitMs: 60_000,
  turnJournalSweepMs: 10 * 60_000,
  /**
   * A journal whose run the server does not know (past its retention, a restarted dev server, another
   * namespace sharing the store) is kept this long after a sweep first found it so, then removed.
   */
  turnJournalUnknownKeepMs: 7 * 24 * 60 * 60_000,
  /**
   * A removed journal leaves a `closed.json` marker this long: a zombie attempt of the closed run (a
   * worker stopped or cut off past its workflow task, waking after the dialogue ended) that finds its
   * turn's record gone is superseded at its claim instead of making its calls again.
   */
  turnJournalClosedKeepMs: 24 * 60 * 60_000,
  /**
   * With local calls each worker process takes its share of every endpoint limit
   * (src/workers/workerCensus.ts): the rollout queue's pollers are counted this often, and a worker
   * seen polling within the window counts as live (a workflow poll waits up to a minute on the server).
   */
  workerCensusMs: 10_000,
  workerLiveWindowMs: 75_000,
  /** A stopping worker waits at most this long for its sweeper's checks in flight. */
  turnJournalStopWaitMs: 2_000,
  /** Bound on a turn activity (three LLM calls and their waits for an endpoint slot; `rollout.activityPer: turn`). */
  turnActivityTimeoutMs: 30 * 60_000,
  /**
   * At most this long without a heartbeat and a turn activity's worker is presumed dead (less when
   * the endpoints' HTTP timeouts are shorter); a live one heartbeats three times as often, even
   * while it waits for an endpoint.
   */
  turnHeartbeatTimeoutMs: 20_000,
  /**
   * A turn activity's finished calls reach the server at most this late (the SDK sends one
   * heartbeat at once, then at most one per interval): what a SIGKILLed worker can lose of a turn.
   */
  turnHeartbeatThrottleMs: 2_000,
  /** Artifact writes are local and quick. */
  artifactActivityTimeoutMs: 60_000,
  /**
   * Steps that take the first finished dialogues: after this long with no dialogue ending, the
   * training workflow asks the server which of its dialogues in flight have closed (one that was
   * terminated or timed out never signals its end).
   */
  dialogueWatchMs: 60_000,
  /**
   * A waiting dialogue's last error as the run carries it across continue-as-new (first-finished
   * steps): every dialogue in flight may wait at once, and the carried state must stay small.
   */
  carriedWaitErrorChars: 500,
  /**
   * A queued LLM call heartbeats while its request is open, so the server hands the call of a
   * worker that died to a live one this soon, not after the call's whole start-to-close timeout.
   */
  llmCallHeartbeatTimeoutMs: 20_000,
  /**
   * A step's publish to one vLLM replica (`policy.replicas`): fetching the adapter from the trainer,
   * loading it, the first token. Attempts before the run waits for the operator naming the replica,
   * and the default wait for a publisher worker to take the task (`training.publish.publisherWaitMs`).
   */
  replicaPublishTimeoutMs: 30 * 60_000,
  replicaPublishAttempts: 5,
  /**
   * A replica's publish heartbeats while it runs: a publisher killed mid-publish (mid-download) is
   * presumed dead this soon and the publish retried on the publisher that replaced it, not after
   * the whole `replicaPublishTimeoutMs` (the soak's kill-publisher-download held a step 30 minutes).
   */
  replicaPublishHeartbeatTimeoutMs: 30_000,
  publisherWaitMs: 120_000,
  /**
   * A full-weights publisher asks its vLLM this often whether it still serves the version last
   * published, and reloads it when not (it restarted): how soon a replica's calls go on after that.
   */
  replicaWeightsCheckMs: 5_000,
} as const;
