import { join, resolve } from 'node:path';
import { temporalReachable } from '../../temporal/devServer.js';
import { connectTemporal, connectWorkerSide, devServerAddress } from '../../temporal/connect.js';
import { installTemporalLogging } from '../../temporal/runtimeLogging.js';
import { createLlmIoWorkers } from '../../workers/llmIoWorkers.js';
import { createOptimizerWorker } from '../../workers/optimizerWorker.js';
import { runWorkers } from '../../workers/runWorkers.js';
import { CONFIG_FLAGS, flagHelp, parseCommand } from '../args.js';
import { commandContext, untilSignal } from '../context.js';
import { ensureLocalModels } from '../localModels.js';
import { ensureLocalTrainer } from '../localTrainer.js';
import { stopDevEnvironment } from '../stopDevEnvironment.js';

export const DEV_FLAGS = CONFIG_FLAGS;

export const DEV_HELP = `attune dev [options]

Starts the embedded Temporal dev server (state in $ATTUNE_HOME/temporal/temporal.db, so it
survives a restart; web UI on port 8233), the local model server when an endpoint points at
it, the local trainer when trainer.url points at this machine and nothing answers there, and
every worker role: rollouts and LLM calls, and the optimizer. Runs until Ctrl-C, then stops
everything it started.

${flagHelp(DEV_FLAGS)}`;

export async function devCommand(argv: string[]): Promise<number> {
  const { values } = parseCommand(argv, DEV_FLAGS, false);
  if (values.help) {
    process.stdout.write(`${DEV_HELP}\n`);
    return 0;
  }
  const ctx = commandContext(values, 'dev');
  const { config, log } = ctx;
  await ctx.store.probe?.();
  if (config.temporal.address) {
    log.warn('temporal.address is set: `attune dev` uses that server instead of starting one', {
      address: config.temporal.address,
    });
  } else if (await temporalReachable(devServerAddress(config), 1000)) {
    throw new Error(
      `a Temporal server already answers at ${devServerAddress(config)}: is \`attune dev\` already running?`,
    );
  }
  installTemporalLogging(undefined, ctx.config.metrics.prometheus);
  const models = await ensureLocalModels(config, log);
  const trainer = await ensureLocalTrainer(config, log).catch(async (error: unknown) => {
    await models.close();
    throw error;
  });
  const temporal = await connectTemporal(config, log, { startIfMissing: true });
  const connection = await connectWorkerSide(temporal);
  const common = { connection, namespace: temporal.namespace, config, store: ctx.store };
  const workers = [...(await createLlmIoWorkers(common)), await createOptimizerWorker(common)];
  const running = runWorkers(workers);
  const ui = temporal.uiUrl ?? '(no UI: external server)';
  process.stdout.write(
    [
      'Attune dev environment is up.',
      `  Temporal:  ${temporal.address} (namespace ${temporal.namespace})`,
      `  Web UI:    ${ui}`,
      `  Policy:    ${config.policy.baseURL} (${config.policy.model})`,
      `  Simulator: ${config.simulator.baseURL} (${config.simulator.model})`,
      `  Trainer:   ${config.trainer.url}${trainer.url ? ' (started here, CPU)' : ''}`,
      `  Artifacts: ${ctx.store.location}`,
      temporal.embedded ? `  State:     ${resolve(join(config.home, 'temporal', 'temporal.db'))}` : '',
      'Press Ctrl-C to stop.',
      '',
    ]
      .filter(Boolean)
      .join('\n') + '\n',
  );
  const signal = await Promise.race([running.then(() => null), untilSignal()]);
  log.info('stopping', { signal });
  await stopDevEnvironment({ workers, running, connection, temporal, trainer, models, log });
  return 0;
}
