import { hostname } from 'node:os';
import { CONFIG_FLAGS, flagHelp, parseCommand, UsageError, type Flags } from '../args.js';
import { commandContext } from '../context.js';
import { connectTemporal } from '../../temporal/connect.js';
import { describeDeployment, setCurrentDeploymentVersion } from '../../temporal/workerDeployments.js';
import { buildIdFrom, DEFAULT_DEPLOYMENT_NAME, deploymentNameFrom } from '../../workers/deploymentVersion.js';

/** The flags of `worker deployment set-current|describe` (one table for both). */
export const WORKER_DEPLOYMENT_FLAGS = {
  'build-id': { type: 'string', value: 'ID', help: 'the build to make current' },
  'deployment-name': {
    type: 'string',
    value: 'NAME',
    help: `default ${DEFAULT_DEPLOYMENT_NAME} (or ATTUNE_WORKER_DEPLOYMENT_NAME)`,
  },
  json: { type: 'boolean', help: 'describe: one JSON object' },
  ...CONFIG_FLAGS,
} as const satisfies Flags;

export const WORKER_DEPLOYMENT_HELP = `attune worker deployment set-current --build-id ID [--deployment-name NAME] [options]
attune worker deployment describe [--deployment-name NAME] [--json] [options]

Worker versioning (workers started with \`attune worker --deployment-version ID\`):

  set-current   make a build the deployment's current version: new workflows and the next task of
                every training or evaluation run go to its workers; rollouts started on the old
                build finish there (keep its workers until \`describe\` says it is drained)
  describe      the current build and each build's drainage (draining: pinned rollouts still run
                on it; drained: none do, its workers may stop)

${flagHelp(WORKER_DEPLOYMENT_FLAGS)}`;

export async function workerDeploymentCommand(argv: string[]): Promise<number> {
  const [action, ...rest] = argv;
  const { values } = parseCommand(rest, WORKER_DEPLOYMENT_FLAGS, false);
  if (values.help || action === undefined || action === '--help' || action === '-h') {
    process.stdout.write(`${WORKER_DEPLOYMENT_HELP}\n`);
    return 0;
  }
  if (action !== 'set-current' && action !== 'describe')
    throw new UsageError(`attune worker deployment: unknown action "${action}" (set-current or describe)`);
  const deploymentName = deploymentNameFrom(values['deployment-name']);
  // Only the flag: a worker's ATTUNE_WORKER_BUILD_ID in the environment must not choose what becomes current.
  const buildId = buildIdFrom(values['build-id'], {});
  if (action === 'set-current' && buildId === undefined)
    throw new UsageError('attune worker deployment set-current needs --build-id');
  const ctx = commandContext(values, 'worker-deployment');
  const temporal = await connectTemporal(ctx.config, ctx.log, { startIfMissing: false });
  try {
    if (action === 'set-current' && buildId !== undefined) {
      await setCurrentDeploymentVersion(temporal.client, { deploymentName, buildId }, `attune@${hostname()}`);
      ctx.log.info('current deployment version set', { deploymentName, buildId });
      return 0;
    }
    const state = await describeDeployment(temporal.client, deploymentName);
    if (values.json) process.stdout.write(`${JSON.stringify(state)}\n`);
    else {
      process.stdout.write(`deployment ${state.deploymentName}: current build ${state.currentBuildId ?? '(none)'}\n`);
      for (const v of state.versions)
        process.stdout.write(`  ${v.buildId}${v.current ? '  current' : ''}${v.drainage ? `  ${v.drainage}` : ''}\n`);
    }
    return 0;
  } finally {
    await temporal.close();
  }
}
