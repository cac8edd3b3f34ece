import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { ArtifactStore } from '../artifacts/store.js';
import { endpointGates } from '../activities/index.js';
import { QUEUE_ACTIVITIES } from '../activities/queueActivities.js';
import { configureTokenRateLimits } from '../activities/tokenRateLimits.js';
import { configuredDataConverter } from '../codec/dataConverter.js';
import type { AttuneConfig } from '../config/schema.js';
import { LIMITS } from '../config/limits.js';
import { taskQueuesFor } from '../config/taskQueues.js';
import {
  TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV,
  testOnlyWorkflowInterceptorModules,
  WORKFLOWS_PATH,
  workflowBundlerOptions,
} from './workflowSource.js';
import type { JournalledRun } from '../journal/turnJournalKeys.js';
import { runStateVia, TurnJournalSweeper } from '../journal/turnJournalSweeper.js';
import { alongsideWorker } from './alongsideWorker.js';
import { pollersVia, WorkerCensus, type CensusQueue } from './workerCensus.js';
import { deploymentWorkerOptions, type WorkerDeploymentVersion } from './deploymentVersion.js';
import { warnOnlyOfLateWorkflowTasks } from './workflowTaskWarning.js';
import { requestCheckLeaseMs } from '../core/requestCheckLease.js';
import { rolloutWorkflowTaskTimeoutMs } from '../config/rolloutSettingsFromConfig.js';

export interface LlmIoWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  config: AttuneConfig;
  store: ArtifactStore;
  /** A pre-built bundle (tests, benchmarks); otherwise the workflows are bundled at start. */
  workflowBundle?: WorkflowBundleWithSourceMap;
  identity?: string;
  /** Default: the configured one (payload encryption with ATTUNE_CODEC_KEYS_FILE or temporal.codec.keysFile). */
  dataConverter?: DataConverter;
  /** Worker versioning: the deployment and build id this worker's code is; absent = unversioned. */
  deploymentVersion?: WorkerDeploymentVersion;
}

/** What every Attune worker shares: connection, namespace, identity, grace time, data converter, deployment version. */
export function commonWorkerOptions(options: Omit<LlmIoWorkerOptions, 'workflowBundle'>, shutdownGraceTime: number) {
  const dataConverter =
    options.dataConverter ?? configuredDataConverter(process.env, options.config.temporal.codec?.keysFile);
  return {
    connection: options.connection,
    namespace: options.namespace,
    shutdownGraceTime,
    ...(options.identity ? { identity: options.identity } : {}),
    ...(dataConverter ? { dataConverter } : {}),
    ...deploymentWorkerOptions(options.deploymentVersion),
  };
}

/**
 * The LLM-I/O side: rollout workflows and artifact writes on one queue, one queue per LLM endpoint
 * so each gets its own concurrency and rate limit, and one for whole dialogue turns
 * (`rollout.activityPer: turn`), whose calls pass through per-endpoint gates in this process.
 */
export async function createLlmIoWorkers(options: LlmIoWorkerOptions): Promise<Worker[]> {
  const { config } = options;
  const queues = taskQueuesFor(config.temporal.taskQueuePrefix);
  const common = commonWorkerOptions(options, LIMITS.shutdownGraceTimeMs);
  const interceptorModules = testOnlyWorkflowInterceptorModules();
  if (options.workflowBundle && interceptorModules.length > 0)
    throw new Error(`${TEST_ONLY_WORKFLOW_INTERCEPTOR_MODULES_ENV} is set but this worker runs a pre-built bundle`);
  const workflowSource = options.workflowBundle
    ? { workflowBundle: options.workflowBundle }
    : {
        workflowsPath: WORKFLOWS_PATH,
        bundlerOptions: workflowBundlerOptions,
        ...(interceptorModules.length > 0 ? { interceptors: { workflowModules: interceptorModules } } : {}),
      };
  // With local activities a workflow task stays open while its LLM call runs, so the rollout
  // worker needs a task slot (and a local-activity slot) for every call it may have in flight.
  // A turn activity holds its slot while it waits for either endpoint, hence the sum here too.
  const callsInFlight = config.policy.maxConcurrency + config.simulator.maxConcurrency;
  const local = config.rollout.llmCalls === 'local';
  warnOnlyOfLateWorkflowTasks(config);
  const gates = endpointGates({ policy: config.policy, simulator: config.simulator });
  configureTokenRateLimits({ policy: config.policy, simulator: config.simulator });
  const runState = runStateVia(options.connection, options.namespace);
  const sweeper = new TurnJournalSweeper(options.store, runState);
  const deps = {
    store: options.store,
    gates,
    runEnding: (run: JournalledRun) => sweeper.afterClose(run),
    // No run id: the latest run of the workflow id.
    workflowStateOf: (workflowId: string) => runState({ workflowId, runId: '' }),
    checkLeaseMs: requestCheckLeaseMs(rolloutWorkflowTaskTimeoutMs(config.rollout)),
  };
  const rollouts = await Worker.create({
    ...common,
    taskQueue: queues.rollouts,
    ...workflowSource,
    activities: QUEUE_ACTIVITIES.rollouts(deps),
    maxConcurrentWorkflowTaskExecutions: local
      ? Math.max(LIMITS.maxConcurrentWorkflowTasks, callsInFlight)
      : LIMITS.maxConcurrentWorkflowTasks,
    maxConcurrentLocalActivityExecutions: callsInFlight,
    ...(local ? { nonStickyToStickyPollRatio: LIMITS.localCallsNonStickyPollRatio } : {}),
    maxCachedWorkflows: LIMITS.maxCachedWorkflows,
    maxConcurrentActivityTaskExecutions: LIMITS.maxConcurrentArtifactActivities,
  });
  const policy = await Worker.create({
    ...common,
    taskQueue: queues.policy,
    activities: QUEUE_ACTIVITIES.policy(),
    maxConcurrentActivityTaskExecutions: config.policy.maxConcurrency,
    ...(config.policy.requestsPerSecond !== undefined
      ? { maxTaskQueueActivitiesPerSecond: config.policy.requestsPerSecond }
      : {}),
  });
  const simulator = await Worker.create({
    ...common,
    taskQueue: queues.simulator,
    activities: QUEUE_ACTIVITIES.simulator(),
    maxConcurrentActivityTaskExecutions: config.simulator.maxConcurrency,
    ...(config.simulator.requestsPerSecond !== undefined
      ? { maxTaskQueueActivitiesPerSecond: config.simulator.requestsPerSecond }
      : {}),
  });
  const turns = await Worker.create({
    ...common,
    taskQueue: queues.turns,
    activities: QUEUE_ACTIVITIES.turns(deps),
    maxConcurrentActivityTaskExecutions: callsInFlight,
    maxHeartbeatThrottleInterval: LIMITS.turnHeartbeatThrottleMs,
    defaultHeartbeatThrottleInterval: LIMITS.turnHeartbeatThrottleMs,
  });
  // Where the calls pass through this process's gates, its workers split the endpoint limits.
  const gatedOn: CensusQueue | null = local
    ? { name: queues.rollouts, type: 'workflow' }
    : config.rollout.activityPer === 'turn'
      ? { name: queues.turns, type: 'activity' }
      : null;
  if (gatedOn) {
    const pollers = pollersVia(options.connection, options.namespace, gatedOn);
    const census = new WorkerCensus(rollouts.options.identity, pollers, gates, config);
    alongsideWorker(gatedOn.type === 'workflow' ? rollouts : turns, census);
  }
  return [alongsideWorker(rollouts, sweeper), policy, simulator, turns];
}
