import { join, resolve } from 'node:path';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext, untilSignal } from '../context.js';
import { connectTemporal, connectWorkerSide } from '../../temporal/connect.js';
import { installTemporalLogging } from '../../temporal/runtimeLogging.js';
import { createLlmIoWorkers } from '../../workers/llmIoWorkers.js';
import { runWorkers, shutdownWorkers } from '../../workers/runWorkers.js';
import { createOptimizerWorker } from '../../workers/optimizerWorker.js';
import { createPublisherWorker } from '../../workers/publisherWorker.js';
import type { AttuneConfig } from '../../config/schema.js';
import { BUILD_ID_ENV, DEFAULT_DEPLOYMENT_NAME, deploymentVersionFrom } from '../../workers/deploymentVersion.js';
import { workerDeploymentCommand } from './workerDeployment.js';

export const WORKER_FLAGS = {
  role: {
    type: 'string',
    value: 'ROLE',
    help: [
      'llm: rollout/evaluation/training workflows, policy and simulator activities (default)',
      'optimizer: optimizer activities, one at a time: run one per GPU host, next to the trainer',
      "publisher: a vLLM replica's publish queue: fetches each step's adapter from the trainer",
      'and loads it into that vLLM; run one beside each replica (--replica)',
      'all: llm and optimizer',
    ].join('\n'),
  },
  replica: {
    type: 'string',
    value: 'NAME',
    help: [
      'publisher: the replica of policy.replicas it serves (queue attune-publish-NAME);',
      'default: the only one listed',
    ].join('\n'),
  },
  'policy-url': {
    type: 'string',
    value: 'URL',
    help: "publisher: this replica's vLLM (e.g. http://127.0.0.1:8000; /v1 added); default: its baseURL",
  },
  'adapter-dir': {
    type: 'string',
    value: 'DIR',
    help: 'publisher: where fetched adapters are written, readable by vLLM (default <home>/adapters)',
  },
  'deployment-version': {
    type: 'string',
    value: 'ID',
    help: [
      `worker versioning: this worker's build id (or ${BUILD_ID_ENV});`,
      'it serves only runs routed to that build. Start every role with the same',
      'id, then `attune worker deployment set-current --build-id ID`.',
      'Without it the worker is unversioned and takes every task',
    ].join('\n'),
  },
  'deployment-name': {
    type: 'string',
    value: 'NAME',
    help: `the worker deployment (default ${DEFAULT_DEPLOYMENT_NAME}, or ATTUNE_WORKER_DEPLOYMENT_NAME)`,
  },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const WORKER_HELP = `attune worker [--role llm|optimizer|publisher|all] [--deployment-version ID] [options]
attune worker deployment set-current|describe ...   (see attune worker deployment --help)

Runs workers against the configured Temporal server (TEMPORAL_ADDRESS, or the dev server of
\`attune dev\`). Stops cleanly on SIGINT/SIGTERM, handing unfinished work back after a grace time.

${flagHelp(WORKER_FLAGS)}`;

export async function workerCommand(argv: string[]): Promise<number> {
  if (argv[0] === 'deployment') return workerDeploymentCommand(argv.slice(1));
  const { values } = parseCommand(argv, WORKER_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${WORKER_HELP}\n`);
    return 0;
  }
  const deploymentVersion = deploymentVersionFrom({
    buildId: values['deployment-version'],
    deploymentName: values['deployment-name'],
  });
  const ctx = commandContext(values, 'worker');
  await ctx.store.probe?.();
  installTemporalLogging(undefined, ctx.config.metrics.prometheus);
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
  const connection = await connectWorkerSide(temporal);
  const role = values.role ?? 'llm';
  if (!['llm', 'optimizer', 'publisher', 'all'].includes(role))
    throw new UsageError('--role must be llm, optimizer, publisher or all');
  const options = {
    connection,
    namespace: temporal.namespace,
    config: ctx.config,
    store: ctx.store,
    ...(deploymentVersion ? { deploymentVersion } : {}),
  };
  const workers = [
    ...(role === 'llm' || role === 'all' ? await createLlmIoWorkers(options) : []),
    ...(role === 'optimizer' || role === 'all' ? [await createOptimizerWorker(options)] : []),
    ...(role === 'publisher'
      ? [
          await createPublisherWorker({
            ...options,
            replica: publisherReplica(ctx.config, values.replica),
            ...(values['policy-url'] ? { policyBaseURL: values['policy-url'] } : {}),
            adapterDir: resolve(values['adapter-dir'] ?? join(ctx.config.home, 'adapters')),
          }),
        ]
      : []),
  ];
  ctx.log.info('workers running', {
    role,
    address: temporal.address,
    namespace: temporal.namespace,
    queuePrefix: ctx.config.temporal.taskQueuePrefix,
    deployment: deploymentVersion ? `${deploymentVersion.deploymentName}:${deploymentVersion.buildId}` : 'unversioned',
    metrics: ctx.config.metrics.prometheus,
    pid: process.pid,
  });
  const running = runWorkers(workers);
  const stopped = await Promise.race([running.then(() => null), untilSignal()]);
  if (stopped) {
    ctx.log.info('shutting down workers', { signal: stopped });
    shutdownWorkers(workers);
    await running;
  }
  await connection.close();
  await temporal.close();
  return 0;
}

/** `--replica`, or the config's only replica. */
function publisherReplica(config: AttuneConfig, flag: string | undefined): string {
  if (flag) return flag;
  const replicas = config.policy.replicas ?? [];
  if (replicas.length === 1) return replicas[0]!.name;
  throw new UsageError(
    `--role publisher needs --replica NAME (policy.replicas: ${replicas.map((r) => r.name).join(', ') || 'none'})`,
  );
}
